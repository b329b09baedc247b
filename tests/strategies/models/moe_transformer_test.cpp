// Mixture-of-experts blocks (TransformerConfig::num_moe_experts): parameter and FLOP counts
// against the published figures, the saved activations against the breakdown, the ops a block
// issues with and without expert parallelism, and the checks on its knobs.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>

#include "strategies/models/presets.hpp"
#include "strategies/models/transformer.hpp"
#include "tests/strategies/models/model_test_util.hpp"

namespace tandem {
namespace {

using testing::RecordingRuntime;

BatchShape shape(std::int64_t b, std::int64_t s) {
  BatchShape batch;
  batch.micro_batch = b;
  batch.seq_len = s;
  return batch;
}

ParallelContext expert_context(int ep, int rank) {
  ParallelContext ctx;
  ctx.ep_size = ep;
  ctx.ep_rank = rank;
  ctx.ep_group.id = 8;
  for (int r = 0; r < ep; ++r) ctx.ep_group.ranks.push_back(r);
  return ctx;
}

TEST(MoeTransformer, MixtralCountsAreThePublishedOnes) {
  // Mistral AI: Mixtral 8x7B has 46.7B parameters and uses 12.9B per token; 8x22B 141B and 39B.
  const TransformerConfig m7 = transformer_preset("mixtral-8x7b");
  EXPECT_NEAR(parameter_count(m7) / 1e9, 46.7, 0.05);
  EXPECT_NEAR(active_parameter_count(m7) / 1e9, 12.9, 0.05);
  const TransformerConfig m22 = transformer_preset("mixtral-8x22b");
  EXPECT_NEAR(parameter_count(m22) / 1e9, 141, 0.5);
  EXPECT_NEAR(active_parameter_count(m22) / 1e9, 39, 0.5);
  // Model FLOPs count what a token goes through: 6 x the active parameters (less the untied
  // input table, which no GEMM reads) plus attention.
  const std::int64_t s = 4096;
  const double attention = 6.0 * m7.num_layers * s * m7.num_attention_heads * m7.head_dim();
  EXPECT_DOUBLE_EQ(model_flops_per_token(m7, s),
                   6.0 * (active_parameter_count(m7) - m7.vocab_size * m7.hidden_size) + attention);
}

TEST(MoeTransformer, ACapacityBelowOneCountsOnlyTheAssignmentsItKeeps) {
  // Capacity 0.5: each expert computes half the balanced share, so the routed experts' FLOPs
  // per token halve; a vanishing capacity leaves attention, router and head (MFU stays <= 100%).
  TransformerConfig c = transformer_preset("mixtral-8x7b");
  const std::int64_t s = 4096;
  const double full = model_flops_per_token(c, s);
  const double routed = 6.0 * c.num_layers * c.moe_router_topk * 3.0 * c.hidden_size * c.expert_ffn_size();
  c.moe_expert_capacity_factor = 1.25;
  EXPECT_DOUBLE_EQ(model_flops_per_token(c, s), full);
  c.moe_expert_capacity_factor = 0.5;
  EXPECT_NEAR(model_flops_per_token(c, s), full - 0.5 * routed, 1e-9 * full);
  c.moe_expert_capacity_factor = 1e-300;
  EXPECT_NEAR(model_flops_per_token(c, s), full - routed, 1e-9 * full);
  EXPECT_GT(model_flops_per_token(c, s), 0.0);
}

TEST(MoeTransformer, ABlockIssuesTheFlopsItsActiveParametersImply) {
  // Dropless: every expert's buffer holds all tokens, so the expert GEMMs do E/k times the
  // active work; with a capacity factor of 1 they do exactly the balanced share.
  TransformerConfig c = transformer_preset("mixtral-8x7b");
  c.num_layers = 1;
  c.moe_expert_capacity_factor = 1.0;
  const std::int64_t b = 1, s = 4096, tokens = b * s;
  const TransformerModel model(c);
  const auto layers = model.build_layers(shape(b, s), ParallelContext{});
  const double h = c.hidden_size, f = c.expert_ffn_size(), E = c.num_moe_experts, k = c.moe_router_topk;
  // Forward GEMMs of the experts: 2 FLOPs x tokens x k x (3 h f) (SwiGLU: gate, up, down).
  const double experts = 2.0 * tokens * k * 3.0 * h * f;
  const double router = 2.0 * tokens * h * E;
  const double attention_gemms = 2.0 * tokens * (h * (h + 2.0 * c.query_groups() * c.head_dim()) + h * h);
  EXPECT_GT(layers[1]->forward_flops(), experts + router + attention_gemms);
  EXPECT_LT(layers[1]->forward_flops(), 1.05 * (experts + router + attention_gemms) + 4.0 * tokens * s * h);
}

// Dropless routing as a cost model prices it: the busiest of E experts' expected load under a
// balanced router (binomial loads at k/E, their expected maximum by Blom's approximation), or a
// measured max/mean ratio; a backend that executes holds every token (Runtime's default).
TEST(MoeTransformer, DroplessExpertsArePricedAtTheBusiestExpertsExpectedLoad) {
  TransformerConfig c = transformer_preset("mixtral-8x7b");  // 8 experts, top-2
  // μ = 4096 x 2/8 = 1024, σ = sqrt(4096 x 0.25 x 0.75) = 27.7, z_8 = 1.424: 1063.4.
  EXPECT_EQ(c.expected_busiest_expert_rows(4096), 1064);
  EXPECT_EQ(c.expected_busiest_expert_rows(1), 1);
  c.moe_router_load_imbalance = 1.25;
  EXPECT_EQ(c.expected_busiest_expert_rows(4096), 1280);
  c.moe_expert_capacity_factor = 1.25;
  EXPECT_EQ(c.expert_capacity(4096), 1280);  // the same rows a capacity factor pads to
  c.moe_router_load_imbalance = 100;
  EXPECT_EQ(c.expected_busiest_expert_rows(4096), 4096);  // never past every token
  // The layer's own measures price it (its FLOPs between the balanced share's and full buffers').
  TransformerConfig dropless = transformer_preset("mixtral-8x7b");
  TransformerConfig balanced = dropless;
  balanced.moe_expert_capacity_factor = 1.0;
  const auto at_load = TransformerModel(dropless).build_layers(shape(1, 4096), ParallelContext{});
  const auto at_share = TransformerModel(balanced).build_layers(shape(1, 4096), ParallelContext{});
  EXPECT_GT(at_load[1]->forward_flops(), at_share[1]->forward_flops());
  EXPECT_LT(at_load[1]->forward_flops(), 1.05 * at_share[1]->forward_flops());
}

TEST(MoeTransformer, SavedActivationsMatchTheBreakdown) {
  for (double capacity : {0.0, 1.25})
    for (Recompute rc : {Recompute::none, Recompute::full}) {
      TransformerConfig c = transformer_preset("mixtral-8x7b");
      c.moe_expert_capacity_factor = capacity;
      ParallelContext ctx = expert_context(4, 1);
      ctx.recompute = rc;
      const TransformerModel model(c);
      const auto layers = model.build_layers(shape(1, 2048), ctx);
      EXPECT_DOUBLE_EQ(layers[1]->saved_activation_bytes(),
                       activation_bytes_per_layer(c, 1, 2048, 1, false, rc))
          << "capacity factor " << capacity;
    }
}

TEST(MoeTransformer, ExpertParallelismHoldsAShareOfTheExpertsAndExchangesTokens) {
  TransformerConfig c = transformer_preset("mixtral-8x7b");
  c.num_layers = 1;
  c.moe_expert_capacity_factor = 1.0;
  const TransformerModel model(c);
  const auto alone = model.build_layers(shape(1, 1024), ParallelContext{});
  const auto shared = model.build_layers(shape(1, 1024), expert_context(4, 2));
  const std::int64_t expert = 3 * c.hidden_size * c.expert_ffn_size();
  EXPECT_EQ(alone[1]->local_parameter_count() - shared[1]->local_parameter_count(), 6 * expert);  // 8 -> 2 experts
  EXPECT_EQ(shared[1]->parameter_count(), alone[1]->parameter_count());
  RecordingRuntime rt;
  shared[1]->allocate(rt, true);
  EXPECT_EQ(shared[1]->expert_gradients().size(), 2u);  // fc1 (gate | up) and fc2 of this rank's experts
  const Tensor x = rt.alloc("x", {1, 1024, c.hidden_size}, DType::bf16, MemCategory::activations);
  rt.release(shared[1]->backward(rt, shared[1]->forward(rt, x, 0), 0));
  int all_to_all = 0;
  for (const auto& op : rt.ops())
    if (op.kind == OpKind::all_to_all) {
      ++all_to_all;
      EXPECT_EQ(op.group_id, 8);
    }
  EXPECT_EQ(all_to_all, 4);  // dispatch and combine, forward and backward
  // Where its experts sit in the logical tensors: rows [4, 6) of [8, ...].
  bool placed = false;
  for (const TensorPlacement& p : shared[1]->placements())
    if (p.name == "layer0.mlp.experts.fc1.weight") {
      placed = true;
      EXPECT_EQ(p.dim, 0);
      ASSERT_EQ(p.segments.size(), 1u);
      EXPECT_EQ(p.segments[0].first, 4);
      EXPECT_EQ(p.segments[0].second, 2);
    }
  EXPECT_TRUE(placed);
}

// Expert-tensor parallelism (tensor parallelism with experts): each expert's width split over the
// tensor group as a dense MLP's, the output and input gradient reduced over it once each, the
// router's gradient a partial sum the strategy reduces.
TEST(MoeTransformer, ExpertTensorParallelismSplitsEachExpertsWidthAndReducesOverTheTensorGroup) {
  TransformerConfig c = transformer_preset("mixtral-8x7b");
  c.num_layers = 1;
  c.moe_expert_capacity_factor = 1.0;
  const TransformerModel model(c);
  const ParallelContext experts_only = expert_context(4, 2);
  ParallelContext etp = experts_only;
  etp.tp_size = 2;
  etp.tp_rank = 1;
  etp.tp_group.id = 3;
  etp.tp_group.ranks = {0, 1};
  const auto whole = model.build_layers(shape(1, 1024), experts_only);
  const auto split = model.build_layers(shape(1, 1024), etp);
  const std::int64_t h = c.hidden_size, a = c.num_attention_heads * c.head_dim(), kv = c.query_groups() * c.head_dim();
  const std::int64_t attention = h * (a + 2 * kv) + a * h, expert = 3 * h * c.expert_ffn_size();
  // Half of attention's and of this rank's 2 experts' weights; the router and norms whole.
  EXPECT_EQ(whole[1]->local_parameter_count() - split[1]->local_parameter_count(), attention / 2 + 2 * expert / 2);
  RecordingRuntime rt;
  split[1]->allocate(rt, true);
  const std::vector<Tensor> partial = split[1]->tensor_partial_gradients();
  ASSERT_EQ(partial.size(), 1u);  // the router's (no sequence parallelism)
  const Tensor x = rt.alloc("x", {1, 1024, h}, DType::bf16, MemCategory::activations);
  rt.release(split[1]->backward(rt, split[1]->forward(rt, x, 0), 0));
  int moe_reductions = 0, all_to_all = 0;
  for (const auto& op : rt.ops()) {
    if (op.kind == OpKind::all_to_all) {
      ++all_to_all;
      EXPECT_EQ(op.group_id, 8);
    }
    if (op.kind == OpKind::all_reduce && op.label.find("mlp.moe") != std::string::npos) {
      ++moe_reductions;
      EXPECT_EQ(op.group_id, 3);
    }
  }
  EXPECT_EQ(all_to_all, 4);
  EXPECT_EQ(moe_reductions, 2);  // the output (forward) and the input gradient (backward)
  // fc1 [8, h, 2f] (gate | up): experts [4, 6) along dimension 0, and of every part the second
  // half of its f columns along dimension 2.
  const std::int64_t f = c.expert_ffn_size();
  bool placed = false;
  for (const TensorPlacement& p : split[1]->placements())
    if (p.name == "layer0.mlp.experts.fc1.weight") {
      placed = true;
      EXPECT_EQ(p.part_numel(), 2 * h * f);
      EXPECT_EQ(p.global_index(0), (4 * h + 0) * 2 * f + f / 2);               // expert 4, row 0, gate column f/2
      EXPECT_EQ(p.global_index(f / 2), (4 * h + 0) * 2 * f + f + f / 2);       // its up part
      EXPECT_EQ(p.global_index(h * f + 1), (5 * h + 0) * 2 * f + f / 2 + 1);  // expert 5
    }
  EXPECT_TRUE(placed);
}

TEST(MoeTransformer, KnobsOutOfRangeAreRefusedNamingTheField) {
  TransformerConfig c = transformer_preset("mixtral-8x7b");
  c.moe_router_topk = 9;
  EXPECT_THROW(TransformerModel{c}, std::invalid_argument);
  c = transformer_preset("mixtral-8x7b");
  c.bias = true;
  try {
    TransformerModel model(c);
    FAIL() << "biases with experts accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("bias"), std::string::npos) << e.what();
  }
  c = transformer_preset("mixtral-8x7b");
  c.moe_expert_capacity_factor = 1.0;
  EXPECT_EQ(c.expert_capacity(4096), 1024);  // 1.0 x 4096 x 2 / 8
  c.moe_expert_capacity_factor = 0;
  EXPECT_EQ(c.expert_capacity(4096), 4096);  // dropless: every token
}

}  // namespace
}  // namespace tandem

namespace tandem {
namespace {

TEST(MoeTransformer, DeepSeekV3LikeCountsAreThePublishedOnesUpToItsAttentionApproximation) {
  // DeepSeek-V3: 671B parameters, 37B active. The preset's grouped-query attention holds 62.5M
  // more weights per layer than MLA (249.6M vs 187.1M: q_a 7168x1536, q_b 1536x128x192, kv_a
  // 7168x576, kv_b 512x128x256, o 16384x7168, and two small norms).
  const TransformerConfig c = transformer_preset("deepseek-v3-like");
  const double mla_excess = 61 * (249.561088e6 - 187.1e6);
  EXPECT_NEAR((parameter_count(c) - mla_excess) / 1e9, 671, 1.0);
  EXPECT_NEAR((active_parameter_count(c) - mla_excess) / 1e9, 37, 1.0);
  // The first 3 blocks are dense, the others hold 256 routed experts and a shared one.
  EXPECT_EQ(block_parameter_count(c, 0), block_parameter_count(c, 2));
  EXPECT_GT(block_parameter_count(c, 3), 15 * block_parameter_count(c, 0));
  const TransformerModel model(c);
  const auto layers = model.build_layers(shape(1, 4096), expert_context(64, 0));
  EXPECT_EQ(layers[1]->expert_gradients().size(), 0u);  // layer0: dense (nothing allocated yet either way)
  EXPECT_EQ(layers[1]->parameter_count(), block_parameter_count(c, 0));
  EXPECT_EQ(layers[4]->parameter_count(), block_parameter_count(c, 3));
}

TEST(MoeTransformer, ASharedExpertAddsItsMlpOnEveryToken) {
  TransformerConfig c = transformer_preset("mixtral-8x7b");
  c.num_layers = 1;
  c.moe_expert_capacity_factor = 1.0;
  const TransformerModel routed(c);
  c.moe_shared_expert_intermediate_size = 4096;
  const TransformerModel both(c);
  const std::int64_t s = 1024;
  const auto a = routed.build_layers(shape(1, s), ParallelContext{});
  const auto b = both.build_layers(shape(1, s), ParallelContext{});
  const double h = c.hidden_size;
  EXPECT_EQ(b[1]->parameter_count() - a[1]->parameter_count(), static_cast<std::int64_t>(3 * h * 4096));
  // 2 FLOPs x tokens x its 3 GEMM weights, plus its activation and the add (a few per element).
  EXPECT_NEAR(b[1]->forward_flops() - a[1]->forward_flops(), 2.0 * s * 3 * h * 4096, 16.0 * s * 4096 + 4.0 * s * h);
  EXPECT_DOUBLE_EQ(b[1]->saved_activation_bytes(), activation_bytes_per_layer(c, 1, s, 1, false, Recompute::none));
}

}  // namespace
}  // namespace tandem
