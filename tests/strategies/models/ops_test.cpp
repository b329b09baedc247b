#include "strategies/ops.hpp"

#include <gtest/gtest.h>

#include "tests/strategies/recording_runtime.hpp"

namespace tandem {
namespace {

using testing::RecordingRuntime;

Tensor tensor(RecordingRuntime& rt, std::vector<std::int64_t> shape, DType dt = DType::bf16) {
  return rt.alloc("t", std::move(shape), dt, MemCategory::activations);
}

TEST(OpsCostTest, GemmFlopsAndBytes) {
  GemmArgs a{128, 256, 64};
  const auto c = ops::gemm_cost(a, DType::bf16);
  EXPECT_DOUBLE_EQ(c.flops, 2.0 * 128 * 256 * 64);
  EXPECT_DOUBLE_EQ(c.bytes, 2.0 * (128 * 64 + 64 * 256 + 128 * 256));
  a.accumulate = true;
  EXPECT_DOUBLE_EQ(ops::gemm_cost(a, DType::bf16).bytes,
                   2.0 * (128 * 64 + 64 * 256 + 2 * 128 * 256));
  // fp32 accumulation buffer: C counts 4 bytes.
  EXPECT_DOUBLE_EQ(ops::gemm_cost(a, DType::bf16, DType::bf16, DType::fp32).bytes,
                   2.0 * (128 * 64 + 64 * 256) + 4.0 * 2 * 128 * 256);
  a.accumulate = false;
  a.batch = 3;
  EXPECT_DOUBLE_EQ(ops::gemm_cost(a, DType::bf16).flops, 3 * 2.0 * 128 * 256 * 64);
}

TEST(OpsCostTest, AttentionCausalHalvesAndBackwardDoubles) {
  AttentionArgs a{.batch = 2, .heads = 8, .kv_heads = 8, .seq = 512, .head_dim = 64, .causal = false};
  const double full = 4.0 * 2 * 8 * 512.0 * 512 * 64;
  EXPECT_DOUBLE_EQ(ops::attention_cost(a, DType::bf16).flops, full);
  a.causal = true;
  EXPECT_DOUBLE_EQ(ops::attention_cost(a, DType::bf16).flops, full / 2);
  a.backward = true;
  EXPECT_DOUBLE_EQ(ops::attention_cost(a, DType::bf16).flops, full);
}

TEST(OpsCostTest, AttentionBytesFlashVsUnfusedAndGqa) {
  AttentionArgs a{.batch = 1, .heads = 16, .kv_heads = 16, .seq = 2048, .head_dim = 128, .flash = true};
  const double q = 1.0 * 2048 * 16 * 128;
  const double rows = 16.0 * 2048;
  EXPECT_DOUBLE_EQ(ops::attention_cost(a, DType::bf16).bytes, 2.0 * 4 * q + 4.0 * rows);
  a.flash = false;
  const double unfused = ops::attention_cost(a, DType::bf16).bytes;
  EXPECT_DOUBLE_EQ(unfused, 2.0 * 4 * q + 4 * 2.0 * rows * 2048);
  EXPECT_GT(unfused, 10 * ops::attention_cost(AttentionArgs{1, 16, 16, 2048, 128, true, true},
                                              DType::bf16).bytes);
  // GQA: K and V with fewer heads move fewer bytes, same FLOPs.
  AttentionArgs g = a;
  g.kv_heads = 4;
  EXPECT_LT(ops::attention_cost(g, DType::bf16).bytes, unfused);
  EXPECT_DOUBLE_EQ(ops::attention_cost(g, DType::bf16).flops,
                   ops::attention_cost(a, DType::bf16).flops);
}

TEST(OpsCostTest, NormForwardAndBackward) {
  const auto ln = ops::norm_cost(NormArgs{NormKind::layer_norm, 10, 100, false}, DType::bf16);
  EXPECT_DOUBLE_EQ(ln.flops, 8.0 * 1000);
  EXPECT_GE(ln.bytes, 2.0 * 2 * 1000);  // read x + write y
  const auto rms = ops::norm_cost(NormArgs{NormKind::rms_norm, 10, 100, false}, DType::bf16);
  EXPECT_LT(rms.flops, ln.flops);
  EXPECT_DOUBLE_EQ(ops::norm_cost(NormArgs{NormKind::rms_norm, 10, 100, true}, DType::bf16).flops,
                   2 * rms.flops);
}

// apex's FusedLayerNorm (Megatron-LM's MixedFusedLayerNorm) computes the weight gradients in a
// kernel of its own that reads x and dy again: two more tensor passes than the one-pass backward
// of Transformer Engine's kernels, the same FLOPs.
TEST(OpsCostTest, TwoPassNormBackwardReadsInputAndGradientAgain) {
  const NormArgs one{NormKind::layer_norm, 10, 100, true};
  NormArgs two = one;
  two.weight_grad_rereads = true;
  const auto a = ops::norm_cost(one, DType::bf16), b = ops::norm_cost(two, DType::bf16);
  EXPECT_DOUBLE_EQ(b.bytes - a.bytes, 2 * 2.0 * 1000);
  EXPECT_DOUBLE_EQ(b.flops, a.flops);
  NormArgs forward = two;
  forward.backward = false;  // the forward is one pass either way
  EXPECT_DOUBLE_EQ(ops::norm_cost(forward, DType::bf16).bytes,
                   ops::norm_cost(NormArgs{NormKind::layer_norm, 10, 100, false}, DType::bf16).bytes);
}

TEST(OpsCostTest, ElementwiseEmbeddingLossOptimizer) {
  const auto add = ops::elementwise_cost(ElementwiseArgs{ElementwiseFn::add, 1000, false},
                                         DType::bf16);
  EXPECT_DOUBLE_EQ(add.flops, 1000);
  EXPECT_DOUBLE_EQ(add.bytes, 3 * 2.0 * 1000);
  const auto drop = ops::elementwise_cost(ElementwiseArgs{ElementwiseFn::dropout, 1000, false},
                                          DType::bf16);
  EXPECT_DOUBLE_EQ(drop.bytes, 2.0 * 1000 + 2.0 * 1000 + 1000);  // in, out, 1-byte mask
  const auto cast = ops::elementwise_cost(ElementwiseArgs{ElementwiseFn::cast, 1000, false},
                                          DType::bf16, DType::fp32);
  EXPECT_DOUBLE_EQ(cast.flops, 0);
  EXPECT_DOUBLE_EQ(cast.bytes, 6.0 * 1000);

  const auto emb = ops::embedding_cost(EmbeddingArgs{100, 50000, 64, 0, false}, DType::bf16);
  EXPECT_DOUBLE_EQ(emb.flops, 0);
  EXPECT_DOUBLE_EQ(emb.bytes, 4.0 * 100 + 2 * 2.0 * 100 * 64);  // independent of vocab
  EXPECT_DOUBLE_EQ(
      ops::embedding_cost(EmbeddingArgs{100, 50000, 64, 0, true}, DType::bf16).flops, 6400);

  const auto loss = ops::loss_cost(LossArgs{10, 1000, false}, DType::bf16);
  EXPECT_DOUBLE_EQ(loss.flops, 5.0 * 10 * 1000);
  EXPECT_GE(loss.bytes, 2.0 * 10 * 1000);

  OptimizerArgs o;
  o.numel = 1000;
  const auto adam = ops::adamw_cost(o, DType::bf16, DType::bf16);
  EXPECT_DOUBLE_EQ(adam.flops, 12.0 * 1000);
  EXPECT_DOUBLE_EQ(adam.bytes, 28.0 * 1000);  // grad 2 + master/m/v r+w 24 + bf16 param 2
  EXPECT_DOUBLE_EQ(ops::adamw_cost(o, DType::fp32, DType::fp32).bytes, 28.0 * 1000);

  EXPECT_DOUBLE_EQ(ops::memcpy_cost(MemcpyArgs{1000}, DType::fp32).bytes, 8000);
  EXPECT_DOUBLE_EQ(ops::flops_of(KernelArgs{GemmArgs{2, 3, 4}}), 48);
  EXPECT_DOUBLE_EQ(ops::flops_of(KernelArgs{MemcpyArgs{10}}), 0);
}

TEST(OpsBuilderTest, ComputeBuildersFillTheOp) {
  RecordingRuntime rt;
  const Tensor a = tensor(rt, {64, 32}), b = tensor(rt, {32, 16}), c = tensor(rt, {64, 16});
  const Tensor g = rt.alloc("g", {32, 16}, DType::fp32, MemCategory::gradients);
  Handle h0 = ops::gemm(rt, Phase::forward, "x.fwd", a, b, c, GemmArgs{64, 16, 32});
  GemmArgs w{32, 16, 64};
  w.trans_a = true;
  w.accumulate = true;
  Handle h1 = ops::gemm(rt, Phase::backward, "x.bwd_w", a, c, g, w,
                        Issue{Stream::compute, {h0}});
  ASSERT_EQ(rt.ops().size(), 2u);
  const auto& op0 = rt.ops()[0];
  EXPECT_EQ(op0.kind, OpKind::gemm);
  EXPECT_EQ(op0.phase, Phase::forward);
  EXPECT_EQ(op0.label, "x.fwd");
  EXPECT_DOUBLE_EQ(op0.flops, 2.0 * 64 * 16 * 32);
  EXPECT_EQ(op0.compute_dtype, DType::bf16);
  ASSERT_EQ(op0.inputs.size(), 2u);
  EXPECT_EQ(op0.outputs.at(0).id, c.id);
  const auto& op1 = rt.ops()[1];
  EXPECT_EQ(h1.id, op1.id);
  ASSERT_EQ(op1.after.size(), 1u);
  EXPECT_EQ(op1.after[0].id, h0.id);
  // The fp32 gradient is read and written in fp32.
  EXPECT_DOUBLE_EQ(op1.bytes, 2.0 * (32 * 64 + 64 * 16) + 4.0 * 2 * 32 * 16);

  const Tensor qkv = tensor(rt, {2, 128, 3 * 64}), o = tensor(rt, {2, 128, 64});
  const Tensor lse = rt.alloc("lse", {2, 4, 128}, DType::fp32, MemCategory::activations);
  AttentionArgs at{2, 4, 4, 128, 16, true, true, false};
  ops::attention(rt, Phase::forward, "attn.fwd", {qkv}, {o, lse}, at);
  EXPECT_EQ(rt.ops().back().kind, OpKind::attention);
  EXPECT_DOUBLE_EQ(rt.ops().back().flops, ops::attention_cost(at, DType::bf16).flops);

  const Tensor p = tensor(rt, {1000}), gr = tensor(rt, {1000});
  const Tensor m = rt.alloc("m", {1000}, DType::fp32, MemCategory::optimizer_state);
  OptimizerArgs oa;
  oa.numel = 1000;
  ops::adamw(rt, "opt", p, gr, {m, m, m}, oa);
  EXPECT_EQ(rt.ops().back().kind, OpKind::optimizer);
  EXPECT_EQ(rt.ops().back().phase, Phase::optimizer);
  EXPECT_DOUBLE_EQ(rt.ops().back().bytes, 28.0 * 1000);

  ops::memcpy(rt, Phase::other, "copy", p, gr);
  EXPECT_DOUBLE_EQ(rt.ops().back().bytes, 4000);
  EXPECT_TRUE(rt.errors().empty());
}

TEST(OpsBuilderTest, CommBuildersUseNcclTestsBytes) {
  RecordingRuntime rt(1, 4);
  Group grp{7, {0, 1, 2, 3}};
  const Tensor t = tensor(rt, {1024, 256});
  ops::all_reduce(rt, Phase::forward, "ar", t, grp, Issue{Stream::tp_comm, {}});
  ops::reduce_scatter(rt, Phase::forward, "rs", t, grp);
  ops::all_gather(rt, Phase::forward, "ag", t, grp);
  ops::all_to_all(rt, Phase::forward, "a2a", t, grp);
  ops::broadcast(rt, Phase::other, "bc", t, grp, 2);
  ops::send(rt, Phase::forward, "send", t, 2, Issue{Stream::pp_send, {}}, 5);
  ops::recv(rt, Phase::forward, "recv", t, 0, Issue{Stream::pp_recv, {}}, 5);
  const Tensor u = tensor(rt, {100}, DType::fp32);
  ops::all_reduce(rt, Phase::backward, "bucket", std::vector<Tensor>{t, u}, grp,
                  Issue{Stream::dp_comm, {}}, ReduceOp::avg);
  const auto& ops_ = rt.ops();
  ASSERT_EQ(ops_.size(), 8u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_TRUE(ops_[i].is_comm);
    EXPECT_DOUBLE_EQ(ops_[i].bytes, 1024.0 * 256 * 2) << ops_[i].label;
    EXPECT_EQ(ops_[i].group_id, 7);
    EXPECT_EQ(ops_[i].group_ranks, grp.ranks);
  }
  EXPECT_EQ(ops_[0].kind, OpKind::all_reduce);
  EXPECT_EQ(ops_[0].stream, Stream::tp_comm);
  EXPECT_EQ(ops_[1].kind, OpKind::reduce_scatter);
  EXPECT_EQ(ops_[2].kind, OpKind::all_gather);
  EXPECT_EQ(ops_[3].kind, OpKind::all_to_all);
  EXPECT_EQ(ops_[4].kind, OpKind::broadcast);
  EXPECT_EQ(ops_[4].root, 2);
  EXPECT_EQ(ops_[5].kind, OpKind::send);
  EXPECT_EQ(ops_[5].peer, 2);
  EXPECT_EQ(ops_[5].tag, 5);
  EXPECT_EQ(ops_[6].kind, OpKind::recv);
  EXPECT_EQ(ops_[6].peer, 0);
  EXPECT_EQ(ops_[7].bucket.size(), 2u);
  EXPECT_DOUBLE_EQ(ops_[7].bytes, 1024.0 * 256 * 2 + 400);
  EXPECT_EQ(ops_[7].reduce, ReduceOp::avg);
  EXPECT_EQ(ops_[7].stream, Stream::dp_comm);
}

TEST(OpsRecordingRuntimeTest, TracksMemoryPerCategoryAndReleaseErrors) {
  RecordingRuntime rt;
  const Tensor a = rt.alloc("a", {1000}, DType::bf16, MemCategory::activations);
  const Tensor b = rt.alloc("b", {1000}, DType::fp32, MemCategory::activations);
  const Tensor p = rt.alloc("p", {10}, DType::fp32, MemCategory::parameters);
  EXPECT_DOUBLE_EQ(rt.current_bytes(MemCategory::activations), 6000);
  rt.release(a);
  EXPECT_DOUBLE_EQ(rt.current_bytes(MemCategory::activations), 4000);
  EXPECT_DOUBLE_EQ(rt.peak_bytes(MemCategory::activations), 6000);
  EXPECT_DOUBLE_EQ(rt.peak_total_bytes(), 6040);
  EXPECT_TRUE(rt.errors().empty());
  rt.release(a);
  EXPECT_EQ(rt.errors().size(), 1u);
  EXPECT_EQ(rt.live_names(MemCategory::activations), std::vector<std::string>{"b"});
  EXPECT_TRUE(rt.is_live(p));
  EXPECT_TRUE(RecordingRuntime::is_event(rt.record(Stream::compute)));
}

}  // namespace
}  // namespace tandem
