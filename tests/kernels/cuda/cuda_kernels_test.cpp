// Every CUDA kernel family against the CPU reference kernels, op by op through both
// dispatchers (the layouts and argument conventions are the contract): fp32 within
// kFp32Tolerance, bf16 GEMMs within kBf16Tolerance, dropout masks bit for bit; attention also
// under context parallelism, for every member of the zigzag split. Skipped without a GPU (all
// but the host check of the kernels' zigzag arithmetic).
#include <gtest/gtest.h>

#include "tests/kernels/cuda/cuda_test_support.hpp"

namespace tandem::kernels::cuda::testing {
namespace {

using I64 = std::int64_t;

TEST(CudaKernels, GemmMatchesCpuForEveryTranspositionAccumulationAndBatch) {
  TANDEM_REQUIRE_GPU();
  const I64 m = 37, n = 29, k = 53;
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (bool acc : {false, true}) {
        const I64 batch = acc ? 3 : 1;
        expect_agree(make_op(OpKind::gemm, GemmArgs{m, n, k, ta, tb, acc, batch},
                             {tensor(0, {batch, ta ? k : m, ta ? m : k}), tensor(1, {batch, tb ? n : k, tb ? k : n})},
                             {tensor(2, {batch, m, n})}));
      }
}

TEST(CudaKernels, Bf16GemmTracksFp32WithinBf16Rounding) {
  TANDEM_REQUIRE_GPU();
  expect_agree(make_op(OpKind::gemm, GemmArgs{256, 192, 320, false, true, false, 1},
                       {tensor(0, {256, 320}), tensor(1, {192, 320})}, {tensor(2, {256, 192})}),
               MathMode::bf16, kBf16Tolerance);
}

AttentionArgs attention_args(bool flash, bool backward, I64 kv_heads) {
  AttentionArgs a;
  a.batch = 2;
  a.heads = 4;
  a.kv_heads = kv_heads;
  a.seq = 19;
  a.head_dim = 8;
  a.causal = true;
  a.flash = flash;
  a.backward = backward;
  return a;
}

TEST(CudaKernels, FlashAttentionForwardAndBackwardMatchCpuWithGqaAndDropout) {
  TANDEM_REQUIRE_GPU();
  for (I64 kv : {4, 2}) {
    const AttentionArgs f = attention_args(true, false, kv);
    const I64 qkv_w = (f.heads + 2 * kv) * f.head_dim;
    cpu::RunOptions options;
    options.attention_dropout = 0.2f;
    options.seed = 5;
    const Tensor qkv = tensor(0, {2, 19, qkv_w}), ctx = tensor(1, {2, 19, f.heads * f.head_dim}),
                 lse = tensor(2, {2, f.heads, 19});
    expect_agree(make_op(OpKind::attention, f, {qkv}, {ctx, lse}, "mb0.layer0.attn.core.fwd"), MathMode::fp32,
                 kFp32Tolerance, 16, options);
    // Backward from any saved logsumexp is the same formula on both backends.
    AttentionArgs b = f;
    b.backward = true;
    expect_agree(make_op(OpKind::attention, b, {qkv, lse, ctx}, {tensor(3, {2, 19, qkv_w})}, "mb0.layer0.attn.core.bwd"),
                 MathMode::fp32, 1e-4, 16, options);
  }
}

TEST(CudaKernels, UnfusedAttentionSavesTheSameProbsMaskAndDropped) {
  TANDEM_REQUIRE_GPU();
  const AttentionArgs f = attention_args(false, false, 4);
  const I64 qkv_w = (f.heads + 2 * f.kv_heads) * f.head_dim, sc = 2 * f.heads * 19 * 19;
  cpu::RunOptions options;
  options.attention_dropout = 0.3f;
  expect_agree(make_op(OpKind::attention, f, {tensor(0, {2, 19, qkv_w})},
                       {tensor(1, {2, 19, f.heads * f.head_dim}), tensor(2, {sc}), tensor(3, {(sc + 3) / 4}),
                        tensor(4, {sc})},
                       "mb0.layer0.attn.core.fwd"),
               MathMode::fp32, kFp32Tolerance, 16, options);
  // Backward from the saved probabilities and mask: inputs {qkv, probs, mask, dropped, d_context}.
  AttentionArgs b = f;
  b.backward = true;
  expect_agree(make_op(OpKind::attention, b,
                       {tensor(0, {2, 19, qkv_w}), tensor(2, {sc}), tensor(3, {(sc + 3) / 4}), tensor(4, {sc}),
                        tensor(5, {2, 19, f.heads * f.head_dim})},
                       {tensor(6, {2, 19, qkv_w})}, "mb0.layer0.attn.core.bwd"),
               MathMode::fp32, 1e-4, 16, options);
}

// The kernels' copy of the zigzag arithmetic (a host function in strategies/op.hpp) is the
// strategies' own: checked on the host, GPU or not.
TEST(CudaKernels, ZigzagPositionOfTheKernelsIsTheStrategies) {
  for (int cp : {1, 2, 3, 4, 8})
    for (I64 local : {2, 4, 6, 10, 64})
      for (int r = 0; r < cp; ++r)
        for (I64 i = 0; i < local; ++i)
          ASSERT_EQ(zigzag_position_hd(i, local, cp, r), zigzag_position(i, local, cp, r))
              << "cp " << cp << ", local " << local << ", member " << r << ", row " << i;
}

// Context parallelism: member `rank`'s two zigzag chunks of query rows against the whole
// sequence's gathered K/V, forward and backward, flash (saving the logsumexp, the mask
// regenerated from the key) or unfused (saving probs, mask and dropped; the mask bit for bit).
void expect_context_parallel_member_agrees(bool flash, I64 kv_heads, int cp, int rank) {
  SCOPED_TRACE((flash ? "flash" : "unfused") + std::string(", kv_heads ") + std::to_string(kv_heads) + ", cp " +
               std::to_string(cp) + ", member " + std::to_string(rank));
  AttentionArgs f = attention_args(flash, false, kv_heads);
  f.seq = 6;  // two chunks of 3
  f.cp_size = cp;
  f.cp_rank = rank;
  const I64 B = f.batch, S = f.seq, T = f.kv_seq(), hd = f.heads * f.head_dim;
  const I64 qkv_w = (f.heads + 2 * kv_heads) * f.head_dim, kv_w = 2 * kv_heads * f.head_dim;
  cpu::RunOptions options;
  options.attention_dropout = 0.2f;
  options.seed = 5;
  const Tensor qkv = tensor(0, {B, S, qkv_w}), kv = tensor(1, {B, T, kv_w}), ctx = tensor(2, {B, S, hd}),
               lse = tensor(3, {B, f.heads, S}), probs = tensor(4, {B, f.heads, S, T}),
               mask = tensor(5, {(B * f.heads * S * T + 3) / 4}), dropped = tensor(6, {B, f.heads, S, T});
  const std::vector<Tensor> saved = flash ? std::vector<Tensor>{lse} : std::vector<Tensor>{probs, mask, dropped};
  std::vector<Tensor> outputs{ctx};
  outputs.insert(outputs.end(), saved.begin(), saved.end());
  const OpOutcome o =
      run_on_both(make_op(OpKind::attention, f, {qkv, kv}, outputs, "mb0.layer0.attn.core.fwd"), MathMode::fp32, 16,
                  options);
  for (const Tensor& t : outputs) {
    if (t.id == mask.id) expect_bitwise_equal(o.gpu.at(t.id), o.cpu.at(t.id), "dropout mask");
    else EXPECT_LE(cpu::testing::rel_error(o.gpu.at(t.id), o.cpu.at(t.id)), kFp32Tolerance) << "output " << t.id;
  }
  // Backward: inputs {qkv, kv, saved…, d_context}, outputs {d_qkv, d_kv}: the whole sequence's
  // K/V gradient, d_qkv's K/V columns 0.
  AttentionArgs b = f;
  b.backward = true;
  std::vector<Tensor> inputs{qkv, kv};
  inputs.insert(inputs.end(), saved.begin(), saved.end());
  inputs.push_back(tensor(7, {B, S, hd}));
  expect_agree(make_op(OpKind::attention, b, inputs, {tensor(8, {B, S, qkv_w}), tensor(9, {B, T, kv_w})},
                       "mb0.layer0.attn.core.bwd"),
               MathMode::fp32, 1e-4, 16, options);
}

TEST(CudaKernels, ContextParallelAttentionMatchesCpuForEveryRankOfTheZigzag) {
  TANDEM_REQUIRE_GPU();
  for (int cp : {2, 4})
    for (int rank = 0; rank < cp; ++rank)
      for (bool flash : {true, false})
        for (I64 kv_heads : {I64{4}, I64{2}}) expect_context_parallel_member_agrees(flash, kv_heads, cp, rank);
}

TEST(CudaKernels, NormsForwardAndBackwardMatchCpu) {
  TANDEM_REQUIRE_GPU();
  const I64 rows = 33, cols = 300;
  for (NormKind kind : {NormKind::layer_norm, NormKind::rms_norm}) {
    expect_agree(make_op(OpKind::norm, NormArgs{kind, rows, cols, false},
                         {tensor(0, {rows, cols}), tensor(1, {cols}), tensor(2, {cols})}, {tensor(3, {rows, cols})}));
    // Backward: dx overwritten, dweight / dbias accumulated into their initial values.
    expect_agree(make_op(OpKind::norm, NormArgs{kind, rows, cols, true},
                         {tensor(0, {rows, cols}), tensor(1, {rows, cols}), tensor(2, {cols})},
                         {tensor(3, {rows, cols}), tensor(4, {cols}), tensor(5, {cols})}),
                 MathMode::fp32, 1e-4);
  }
}

TEST(CudaKernels, ElementwiseFamilyMatchesCpu) {
  TANDEM_REQUIRE_GPU();
  const I64 rows = 24, cols = 40, n = rows * cols;
  auto ew = [](ElementwiseFn fn, I64 numel, bool backward) { return ElementwiseArgs{fn, numel, backward}; };
  expect_agree(make_op(OpKind::elementwise, ew(ElementwiseFn::gelu, n, false), {tensor(0, {n})}, {tensor(1, {n})}));
  expect_agree(make_op(OpKind::elementwise, ew(ElementwiseFn::gelu, n, true), {tensor(0, {n}), tensor(1, {n})},
                       {tensor(2, {n})}));
  expect_agree(make_op(OpKind::elementwise, ew(ElementwiseFn::swiglu, n, false), {tensor(0, {rows, 2 * cols})},
                       {tensor(1, {rows, cols})}));
  expect_agree(make_op(OpKind::elementwise, ew(ElementwiseFn::swiglu, n, true),
                       {tensor(0, {rows, 2 * cols}), tensor(1, {rows, cols})}, {tensor(2, {rows, 2 * cols})}));
  expect_agree(make_op(OpKind::elementwise, ew(ElementwiseFn::add, n, false), {tensor(0, {n}), tensor(1, {cols})},
                       {tensor(2, {n})}));
  expect_agree(make_op(OpKind::elementwise, ew(ElementwiseFn::add, n, true), {tensor(0, {n})},
                       {tensor(1, {n}), tensor(2, {cols})}), MathMode::fp32, 1e-5);
  expect_agree(make_op(OpKind::elementwise, ew(ElementwiseFn::bias_add, n, false), {tensor(0, {n}), tensor(1, {cols})},
                       {tensor(2, {n})}));
  expect_agree(make_op(OpKind::elementwise, ew(ElementwiseFn::bias_add, n, true), {tensor(0, {n})},
                       {tensor(1, {cols})}), MathMode::fp32, 1e-5);
  expect_agree(make_op(OpKind::elementwise, ew(ElementwiseFn::scale, n, false), {tensor(0, {n})}, {tensor(1, {n})},
                       "mb0.grads.zero"));
  expect_agree(make_op(OpKind::elementwise, ew(ElementwiseFn::scale, rows, false), {tensor(0, {rows, 2})},
                       {tensor(1, {1})}, "mb0.loss.mean"));
  expect_agree(make_op(OpKind::elementwise, ew(ElementwiseFn::cast, n, false), {tensor(0, {n})}, {tensor(1, {n})}));
}

TEST(CudaKernels, DropoutMasksAreBitIdenticalToCpu) {
  TANDEM_REQUIRE_GPU();
  const I64 n = 4099;
  cpu::RunOptions options;
  options.hidden_dropout = 0.25f;
  options.seed = 99;
  options.iteration = 3;
  const OpOutcome o = run_on_both(make_op(OpKind::elementwise, ElementwiseArgs{ElementwiseFn::dropout, n, false},
                                          {tensor(0, {n})}, {tensor(1, {n}), tensor(2, {(n + 3) / 4})},
                                          "mb1.layer2.mlp.dropout.fwd"),
                                  MathMode::fp32, 16, options);
  const auto* cm = reinterpret_cast<const std::uint8_t*>(o.cpu.at(2).data());
  const auto* gm = reinterpret_cast<const std::uint8_t*>(o.gpu.at(2).data());
  for (I64 i = 0; i < n; ++i) ASSERT_EQ(cm[i], gm[i]) << "mask element " << i;
  EXPECT_LE(kernels::cpu::testing::rel_error(o.gpu.at(1), o.cpu.at(1)), kFp32Tolerance);
  // Backward regenerated from the key (no stored mask) matches too.
  expect_agree(make_op(OpKind::elementwise, ElementwiseArgs{ElementwiseFn::dropout, n, true}, {tensor(0, {n})},
                       {tensor(1, {n})}, "mb1.layer2.mlp.dropout.bwd"),
               MathMode::fp32, kFp32Tolerance, 16, options);
}

TEST(CudaKernels, EmbeddingTokenAndPositionLookupsMatchCpu) {
  TANDEM_REQUIRE_GPU();
  const I64 b = 2, s = 9, vocab = 16, hidden = 12, tokens = b * s;
  // Vocab-parallel shard [4, 12): other shards' ids give zero rows / no gradient.
  const EmbeddingArgs shard{tokens, 8, hidden, 4, false};
  expect_agree(make_op(OpKind::embedding, shard, {tensor(0, {8, hidden}), tensor(1, {b, s}, DType::int32)},
                       {tensor(2, {b, s, hidden})}));
  EmbeddingArgs back = shard;
  back.backward = true;
  expect_agree(make_op(OpKind::embedding, back, {tensor(0, {b, s, hidden}), tensor(1, {b, s}, DType::int32)},
                       {tensor(2, {8, hidden})}), MathMode::fp32, 1e-5, vocab);
  const EmbeddingArgs pos{tokens, 32, hidden, 3, false};
  expect_agree(make_op(OpKind::embedding, pos, {tensor(0, {32, hidden})}, {tensor(1, {b, s, hidden})}));
  EmbeddingArgs pos_back = pos;
  pos_back.backward = true;
  expect_agree(make_op(OpKind::embedding, pos_back, {tensor(0, {b, s, hidden})}, {tensor(1, {32, hidden})}),
               MathMode::fp32, 1e-5);
}

TEST(CudaKernels, CrossEntropyForwardAndBackwardMatchCpu) {
  TANDEM_REQUIRE_GPU();
  const I64 tokens = 21, vocab = 1000;
  expect_agree(make_op(OpKind::loss, LossArgs{tokens, vocab, false},
                       {tensor(0, {tokens, vocab}), tensor(1, {tokens}, DType::int32)},
                       {tensor(2, {tokens, vocab}), tensor(3, {tokens, 2})}),
               MathMode::fp32, 1e-5, static_cast<std::int32_t>(vocab));
  expect_agree(make_op(OpKind::loss, LossArgs{tokens, vocab, true},
                       {tensor(0, {tokens, vocab}), tensor(1, {tokens}, DType::int32)}, {tensor(2, {tokens, vocab})}),
               MathMode::fp32, 1e-5, static_cast<std::int32_t>(vocab));
}

// The vocab-parallel steps (LossStep) of a shard holding vocab ids [offset, offset + vocab).
// The test labels are (7i + 3) mod limit (cuda_test_support.hpp): with vocab 50, offset 50 and
// limit 150 they fall below, inside and above the shard; with vocab 700 (rows wider than a
// block) all are inside. The global max and sums inputs are arbitrary (sums positive, as after
// the all-reduce).
TEST(CudaKernels, VocabParallelCrossEntropyStepsMatchCpu) {
  TANDEM_REQUIRE_GPU();
  const I64 tokens = 23;
  struct Shard {
    I64 vocab, offset;
    std::int32_t limit;
  };
  for (const Shard& sh : {Shard{50, 50, 150}, Shard{700, 0, 700}}) {
    const I64 vocab = sh.vocab;
    const Tensor logits = tensor(0, {tokens, vocab}), labels = tensor(1, {tokens}, DType::int32);
    LossArgs a{tokens, vocab, false, sh.offset, LossStep::shard_max};
    expect_agree(make_op(OpKind::loss, a, {logits}, {tensor(2, {tokens})}), MathMode::fp32, 1e-6, sh.limit);
    a.step = LossStep::shard_sum_exp;
    expect_agree(make_op(OpKind::loss, a, {logits, labels, tensor(2, {tokens})}, {tensor(3, {tokens, 2})}),
                 MathMode::fp32, 1e-5, sh.limit);
    a.step = LossStep::shard_finish;
    expect_agree(make_op(OpKind::loss, a, {logits, labels, tensor(2, {tokens}), tensor(3, {tokens, 2})},
                         {tensor(4, {tokens, vocab}), tensor(5, {tokens, 2})}),
                 MathMode::fp32, 1e-5, sh.limit, {}, /*non_negative=*/{3});
    // The unsharded forward and the backward take the shard's offset too.
    a.step = LossStep::full;
    expect_agree(make_op(OpKind::loss, a, {logits, labels}, {tensor(4, {tokens, vocab}), tensor(5, {tokens, 2})}),
                 MathMode::fp32, 1e-5, sh.limit);
    a.backward = true;
    expect_agree(make_op(OpKind::loss, a, {logits, labels}, {tensor(4, {tokens, vocab})}), MathMode::fp32, 1e-5,
                 sh.limit);
  }
}

// ZeRO-2/3: a gradient or parameter tensor only the shard's size is the shard itself.
TEST(CudaKernels, FusedAdamWReadsShardSizedParamsAndGradsFromTheirStart) {
  TANDEM_REQUIRE_GPU();
  const I64 shard = 300;
  OptimizerArgs a;
  a.numel = shard;
  a.offset = 600;
  a.step = 2;
  expect_agree(make_op(OpKind::optimizer, a,
                       {tensor(0, {shard}), tensor(1, {shard}), tensor(2, {shard}), tensor(3, {shard}),
                        tensor(4, {shard})},
                       {tensor(0, {shard}), tensor(2, {shard}), tensor(3, {shard}), tensor(4, {shard})}),
               MathMode::fp32, 1e-5, 16, {}, /*non_negative=*/{4});
}

TEST(CudaKernels, FusedAdamWMatchesCpuWithMasterAndZeroOffset) {
  TANDEM_REQUIRE_GPU();
  const I64 n = 1000, shard = 300;
  OptimizerArgs a;
  a.numel = shard;
  a.offset = 500;
  a.step = 3;
  a.grad_scale = 0.25f;
  expect_agree(make_op(OpKind::optimizer, a,
                       {tensor(0, {n}), tensor(1, {n}), tensor(2, {shard}), tensor(3, {shard}), tensor(4, {shard})},
                       {tensor(0, {n}), tensor(2, {shard}), tensor(3, {shard}), tensor(4, {shard})}),
               MathMode::fp32, 1e-5, 16, {}, /*non_negative=*/{4});
}

}  // namespace
}  // namespace tandem::kernels::cuda::testing
