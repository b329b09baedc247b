// Small hybrid strategies (GPT-3 1.3B layers) in the shapes the simulator's coarsening tests
// compare with their exact forms: tensor / pipeline / data degrees, interleaving, ZeRO, sequence
// parallelism, layers in proportion to device speed.
#pragma once

#include <memory>

#include "platforms/cluster.hpp"
#include "strategies/hybrid_parallel.hpp"
#include "strategies/models/presets.hpp"
#include "strategies/models/transformer.hpp"
#include "tests/sim/folding_test_support.hpp"

namespace tandem::sim_test {

// GPT-3 1.3B's layer (hidden 2048, 16 heads) with `layers` of them: small enough to simulate
// unfolded, wide enough for 8-way tensor parallelism.
inline std::shared_ptr<const Model> gpt(int layers) {
  auto cfg = transformer_preset("gpt3-1.3b");
  cfg.num_layers = layers;
  cfg.seq_length = 1024;
  return std::make_shared<TransformerModel>(cfg);
}

struct HybridShape {
  int tp = 8, pp = 1, dp = 1, virtual_stages = 1, zero = 0;
  std::int64_t micro_batches = 4;  // per replica
  bool sp = false;
  bool proportional = false;
  int layers = 4;
};

inline std::unique_ptr<Strategy> hybrid(const Cluster& cluster, const HybridShape& s) {
  TrainingConfig t;
  t.global_batch_size = s.micro_batches * s.dp;
  t.micro_batch_size = 1;
  t.seq_length = 1024;
  ParallelConfig p;
  p.tensor_model_parallel_size = s.tp;
  p.pipeline_model_parallel_size = s.pp;
  p.data_parallel_size = s.dp;
  p.zero_stage = s.zero;
  p.sequence_parallel = s.sp;
  if (s.sp) p.recompute_granularity = Recompute::selective;
  HybridConfig h;
  h.virtual_stages = s.virtual_stages;
  if (s.virtual_stages > 1) h.schedule = PipelineSchedule::interleaved_1f1b;
  if (s.proportional) h.partition = HybridConfig::Partition::proportional;
  return std::make_unique<HybridParallel>(gpt(s.layers), t, p, h, devices_of(cluster, s.tp * s.pp * s.dp));
}

}  // namespace tandem::sim_test
