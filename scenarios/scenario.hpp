// A scenario: a model, a cluster, a training configuration and a strategy with its knobs (named
// as in Megatron-LM / DeepSpeed), plus how to simulate it. Scenarios are YAML files; bundled ones
// live in scenarios/. Loading validates everything a scenario can get wrong and reports it as
// one InputError naming file, line and field.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "common/input_error.hpp"
#include "platforms/cluster.hpp"
#include "scenarios/straggler_reader.hpp"
#include "sim/simulation.hpp"
#include "strategies/model.hpp"
#include "strategies/models/mlp.hpp"
#include "strategies/models/transformer.hpp"
#include "strategies/hybrid_parallel.hpp"
#include "strategies/strategy.hpp"

namespace tandem {

struct ModelSpec {
  enum class Kind { transformer, mlp } kind = Kind::transformer;
  TransformerConfig transformer;
  MlpConfig mlp;
  std::string name() const;
};

struct Scenario {
  std::string name;
  std::string file;
  std::string description;
  ModelSpec model;
  Cluster cluster;  // the devices the plan uses: the `use:` part of the cluster file, if given
  // `use: {h100: 16, a100: 8}`: devices of each node group (whole nodes, the cluster's first
  // ones), for what-ifs on part of a cluster; empty: every device.
  std::map<std::string, int> use;
  TrainingConfig training;
  std::string strategy_type = "data_parallel";  // or "hybrid" (Megatron-style 3D)
  ParallelConfig parallel;
  HybridConfig hybrid;
  sim::SimulationOptions simulation;  // its stragglers: the `stragglers:` section drawn with seed 1
  std::vector<StragglerSpec> stragglers;  // as written (drawn ranks and ranges undrawn)
  // Line of every field read, keyed by dotted path ("strategy.data_parallel_size"), so that
  // inconsistencies found after loading still point at the right line.
  std::map<std::string, int> lines;

  int line_of(const std::string& field) const;
  [[noreturn]] void fail(const std::string& field, const std::string& message) const;
};

// Whether loading also refuses a scenario too large to simulate on this machine
// (scenario_limits.hpp): always, but for callers that report such a case and go on (validate).
enum class SizeCheck { refuse, skip };

// Loads and validates a scenario file (`name_or_path`: a path, or the name of a bundled one).
Scenario load_scenario(const std::string& name_or_path, SizeCheck size_check = SizeCheck::refuse);

std::shared_ptr<const Model> make_model(const ModelSpec& spec);
// Builds the scenario's strategy; an impossible strategy is an InputError at the faulty knob.
// `speeds` (one per rank), when given, replace the devices' peak speeds as the weights of the
// heterogeneity-aware splits (measured speeds: run --rebalance-after).
std::unique_ptr<Strategy> make_strategy(const Scenario& scenario, const std::vector<double>& speeds = {});

}  // namespace tandem
