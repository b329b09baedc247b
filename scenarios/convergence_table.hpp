// Convergence, measured (validation/convergence/*.json, written by measure.sh): the loss per step
// of each strategy variant, trained for real on the CPU backend on a real text. The search's
// time_to_target_loss objective reads one: a plan's time to the target loss is the steps its
// variant took to reach it THERE (a small model's steps standing for the planned model's, stated
// as such) times the plan's simulated step time HERE.
//
// Only what changes the maths of a step tells variants apart: the gradient codec, local SGD's
// period and blocks, parameter servers and their staleness. Tensor, pipeline, sequence and expert
// splits and ZeRO compute the same update as synchronous data parallelism (the CPU equivalence
// tests hold them to it), so they take the synchronous variant's steps.
#pragma once

#include <compare>
#include <optional>
#include <string>
#include <vector>

#include "strategies/compression/compression_config.hpp"
#include "strategies/strategy.hpp"

namespace tandem {

// The part of a strategy that changes how the loss falls per step.
struct ConvergenceKey {
  CompressionConfig codec;  // type, PowerSGD's rank, top-k's ratio compared
  int local_sgd_steps = 1;
  int local_sgd_group_size = 1;
  bool parameter_servers = false;
  int parameter_server_staleness = 0;
  bool parameter_server_asynchronous = false;

  bool operator==(const ConvergenceKey& other) const;
};

ConvergenceKey convergence_key(const ParallelConfig& parallel);

// Strategy fields as a convergence file's variants write them ("data_parallel_size: 4,
// gradient_compression: int8"; the keys that change a step's maths, and type) applied to `p`;
// an InputError placed in `where` (its line 1) for anything else.
void apply_convergence_fields(const std::string& text, const std::string& where, ParallelConfig& p);
// "local_sgd_steps=4", "int8", "parameter servers, staleness 1", "synchronous".
std::string describe(const ConvergenceKey& key);

struct ConvergenceVariant {
  std::string name;
  ConvergenceKey key;
  std::vector<double> losses;  // per step, from step 1
};

struct ConvergenceTable {
  std::string file;
  std::string model;        // what was trained ("gpt-tiny, global batch 16, ...")
  double target_loss = 0;   // the file's, or the search's `target_loss`
  std::vector<ConvergenceVariant> variants;

  // The variant measured for `key`, or nullptr.
  const ConvergenceVariant* find(const ConvergenceKey& key) const;
  // The steps a strategy measured to target_loss; nullopt, with `why` said, when the file has no
  // variant for it or its variant never got there.
  std::optional<int> steps_to_target(const ParallelConfig& parallel, std::string& why) const;
};

// Steps to `target`: the first step whose loss, averaged with the 4 before it, is at or below it
// (one noisy step does not count); nullopt when the curve never gets there.
std::optional<int> steps_to_loss(const std::vector<double>& losses, double target);

// Reads a convergence file; an InputError naming the file, line and field for a malformed one (a
// variant's strategy is read as a scenario's `strategy:` fields). `target_loss`, when given,
// replaces the file's.
ConvergenceTable load_convergence_table(const std::string& path, std::optional<double> target_loss = std::nullopt);

}  // namespace tandem
