// One point of the strategy search space: every knob the search may turn, in Megatron-LM's
// vocabulary. A candidate is plain data, ordered canonically (field by field) so that ties between
// equally good strategies are always broken the same way, whatever the order of evaluation.
#pragma once

#include <nlohmann/json.hpp>

#include <compare>
#include <cstdint>
#include <string>
#include <vector>

#include "strategies/hybrid_parallel.hpp"
#include "strategies/model.hpp"
#include "strategies/pipeline_schedule.hpp"
#include "strategies/rank_layout.hpp"
#include "strategies/strategy.hpp"

namespace tandem::search {

struct Candidate {
  int tp = 1;  // tensor_model_parallel_size
  int pp = 1;  // pipeline_model_parallel_size
  int dp = 1;  // data_parallel_size
  int cp = 1;  // context_parallel_size
  std::int64_t micro_batch_size = 1;
  PipelineSchedule schedule = PipelineSchedule::one_f_one_b;
  int virtual_stages = 1;
  int zero_stage = 0;
  bool offload_optimizer = false;  // ZeRO-Offload (with ZeRO >= 1, as DeepSpeed has it)
  Recompute recompute = Recompute::none;
  bool sequence_parallel = false;
  RankOrder order = RankOrder::tp_dp_pp;
  HybridConfig::Partition partition = HybridConfig::Partition::uniform;
  // Transformer layers per pipeline stage, given explicitly (found by moving layers between
  // stages, search.hpp's refinement); empty: `partition` decides. When set, `partition` is uniform.
  std::vector<int> layers_per_stage;
  BatchSplit batch_split = BatchSplit::even;
  int local_sgd_steps = 1;  // local SGD's averaging period (1: synchronous data parallelism)
  // Hierarchical local SGD: blocks of this many replicas step together (with local_sgd_steps > 1).
  int local_sgd_group_size = 1;
  Fp8Recipe fp8 = Fp8Recipe::none;  // training.fp8: FP8 GEMMs in the transformer blocks
  int ep = 1;  // expert_model_parallel_size (mixture-of-experts models; divides dp)
  // Parameter servers (data parallelism alone: tp = pp = cp = 1): server ranks after the dp
  // workers, and the staleness of their updates (strategies/parameter_server.hpp).
  int parameter_servers = 0;
  int parameter_server_staleness = 0;
  bool parameter_server_optimizer = false;  // the servers step the optimizer (synchronous plans)
  bool parameter_server_asynchronous = false;  // asynchronous servers (they step the optimizer)
  // Nodes used of each node group of the cluster (platforms/cluster_selection.hpp); empty: ranks
  // 0..world-1 of the whole cluster.
  std::vector<int> nodes;

  int world_size() const { return tp * pp * dp * cp + parameter_servers; }
  // Uses a heterogeneity-aware split (stages by device speed or given explicitly, batch shares by
  // device speed).
  bool heterogeneity_aware() const;
  // "tp=8 pp=3 dp=8 mbs=1 1f1b zero=1 rc=none order=tp-dp-pp stages=proportional batch=even"
  // ("stages=20/12/8" for explicit layer counts, " nodes=4/0" after it for a node selection): readable and unique (the search's result maps are keyed by it).
  std::string key() const;

  auto operator<=>(const Candidate&) const = default;
  bool operator==(const Candidate&) const = default;
};

// The knobs under their scenario names (how a candidate travels to MPI workers and into reports).
nlohmann::json to_json(const Candidate& candidate);
Candidate candidate_from_json(const nlohmann::json& j);  // throws on a malformed or unknown value

const char* to_string(HybridConfig::Partition partition);  // "uniform", "proportional"
// The stages' layer counts as the key writes them ("20/12/8"), or the partition's name.
std::string partition_text(const Candidate& candidate);
const char* to_string(BatchSplit split);                   // "even", "proportional"

}  // namespace tandem::search
