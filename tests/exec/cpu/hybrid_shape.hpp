// A hybrid strategy (strategies/hybrid_parallel.hpp) by its shape, on identical CPU-core ranks:
// what the CPU equivalence tests and the CPU training-step benchmark run.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "strategies/hybrid_parallel.hpp"
#include "strategies/models/transformer.hpp"
#include "strategies/models/presets.hpp"

namespace tandem::exec::cpu::testing {

struct HybridShape {
  std::string name;
  int tp = 1, pp = 1, dp = 1;
  int cp = 1;                         // context_parallel_size
  bool sp = false;
  int zero = 0;
  bool offload = false;               // ZeRO-Offload: the optimizer on the host
  bool tp_comm_overlap = false;       // Megatron-Core's --tp-comm-overlap
  bool overlap_param_gather = false;  // Megatron-Core's --overlap-param-gather
  bool blocking_p2p = false;          // DeepSpeed's blocking pipeline hand-overs
  bool overlap_p2p = false;           // Megatron-Core's --overlap-p2p-communication (interleaved)
  int local_sgd_steps = 1;            // local SGD's averaging period
  int local_sgd_group_size = 1;       // hierarchical local SGD's block of replicas
  PipelineSchedule schedule = PipelineSchedule::one_f_one_b;
  int virtual_stages = 1;
  DType precision = DType::fp32;
  bool rope = false;  // rotary positions (what context parallelism needs) instead of a learned table
  bool moe = false;   // experts instead of the dense MLP (small_moe_gpt)
  int ep = 1;         // expert_model_parallel_size
  CompressionConfig compression{};  // gradient_compression: the data-parallel all-reduce's codec
  int world_size() const { return tp * pp * dp * cp; }
};

// A small GPT without dropout (so that strategies are comparable number for number); positions
// cover the sequence.
inline std::shared_ptr<const Model> small_gpt(std::string name, int layers, std::int64_t hidden, int heads,
                                              std::int64_t vocab, std::int64_t seq, bool rope = false) {
  TransformerConfig c = gpt_config(std::move(name), layers, hidden, heads, seq, vocab);
  if (rope) c.position = PositionEmbeddingType::rope;
  c.hidden_dropout = 0;
  c.attention_dropout = 0;
  return std::make_shared<TransformerModel>(std::move(c));
}

// The same with a mixture of experts in every block but the first: 4 experts of width 2·hidden,
// top-2, an expert capacity of 1.0x its balanced share (so that some picks are dropped), a shared
// expert of width hidden and Switch's load-balancing loss, no biases (experts have none).
// `rope` with context parallelism, which also needs it dropless (capacity 0): a rank's expert
// capacity counts its own part of each sequence, so it cannot drop the picks one rank drops.
inline std::shared_ptr<const Model> small_moe_gpt(std::string name, int layers, std::int64_t hidden, int heads,
                                                  std::int64_t vocab, std::int64_t seq, bool rope = false) {
  TransformerConfig c = gpt_config(std::move(name), layers, hidden, heads, seq, vocab);
  if (rope) c.position = PositionEmbeddingType::rope;
  c.hidden_dropout = 0;
  c.attention_dropout = 0;
  c.bias = false;
  c.num_moe_experts = 4;
  c.moe_router_topk = 2;
  c.moe_ffn_hidden_size = 2 * hidden;
  c.moe_expert_capacity_factor = rope ? 0.0 : 1.0;
  c.moe_aux_loss_coeff = 0.01;
  // DeepSeek's layout: the first block dense, a shared expert beside the routed ones.
  c.moe_first_dense_layers = 1;
  c.moe_shared_expert_intermediate_size = hidden;
  return std::make_shared<TransformerModel>(std::move(c));
}

// Global batch 8 in micro-batches of 2; `training` supplies the rest (lr, sequence length).
inline std::unique_ptr<HybridParallel> make_hybrid(std::shared_ptr<const Model> model, const HybridShape& s,
                                                   TrainingConfig training, std::int64_t bucket_params) {
  training.global_batch_size = 8;
  training.micro_batch_size = 2;
  training.precision = s.precision;
  ParallelConfig parallel;
  parallel.tensor_model_parallel_size = s.tp;
  parallel.pipeline_model_parallel_size = s.pp;
  parallel.data_parallel_size = s.dp;
  parallel.context_parallel_size = s.cp;
  parallel.sequence_parallel = s.sp;
  parallel.zero_stage = s.zero;
  parallel.offload_optimizer = s.offload;
  parallel.tp_comm_overlap = s.tp_comm_overlap;
  parallel.overlap_param_gather = s.overlap_param_gather;
  parallel.pipeline_blocking_p2p = s.blocking_p2p;
  parallel.overlap_p2p_comm = s.overlap_p2p;
  parallel.local_sgd_steps = s.local_sgd_steps;
  parallel.local_sgd_group_size = s.local_sgd_group_size;
  parallel.expert_model_parallel_size = s.ep;
  parallel.ddp_bucket_size = bucket_params;
  parallel.gradient_compression = s.compression;
  HybridConfig config;
  config.schedule = s.schedule;
  config.virtual_stages = s.virtual_stages;
  const std::vector<RankDevice> devices(static_cast<std::size_t>(s.world_size()), RankDevice{1.0, 1e12, 0, "cpu"});
  return std::make_unique<HybridParallel>(std::move(model), training, parallel, config, devices);
}

}  // namespace tandem::exec::cpu::testing
