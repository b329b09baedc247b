// The GPU kernel model's shape effects (sim/gpu_kernel_model.hpp): tile and wave quantization of
// GEMMs over the SM count, streaming kernels at the achievable HBM fraction, Megatron's fusions,
// unfused attention over all s² scores and flash attention at its measured efficiency.
#include "sim/gpu_kernel_model.hpp"

#include <gtest/gtest.h>

#include <initializer_list>

#include "sim/cost_model.hpp"
#include "strategies/ops.hpp"

namespace tandem::sim::gpu {
namespace {

DeviceProfile a100() { return find_device_profile("a100-sxm-80gb"); }

ComputeOp gemm(std::int64_t m, std::int64_t n, std::int64_t k, DType dt = DType::bf16) {
  ComputeOp op;
  op.kind = OpKind::gemm;
  const GemmArgs args{m, n, k};
  op.args = args;
  const auto cost = ops::gemm_cost(args, dt);
  op.flops = cost.flops;
  op.bytes = cost.bytes;
  op.compute_dtype = dt;
  return op;
}

ComputeOp elementwise(ElementwiseFn fn, std::int64_t numel, bool backward) {
  ComputeOp op;
  op.kind = OpKind::elementwise;
  const ElementwiseArgs args{fn, numel, backward};
  op.args = args;
  const auto cost = ops::elementwise_cost(args, DType::bf16);
  op.flops = cost.flops;
  op.bytes = cost.bytes;
  return op;
}

ComputeOp attention(bool flash, bool backward, std::int64_t seq, std::int64_t head_dim = 128, int flash_version = 0) {
  ComputeOp op;
  op.kind = OpKind::attention;
  AttentionArgs a;
  a.batch = 1, a.heads = 16, a.kv_heads = 16, a.seq = seq, a.head_dim = head_dim, a.causal = true;
  a.flash = flash, a.backward = backward, a.flash_version = flash_version;
  op.args = a;
  const auto cost = ops::attention_cost(a, DType::bf16);
  op.flops = cost.flops;
  op.bytes = cost.bytes;
  // Tensor conventions (ops.hpp), as the transformer issues them: forward outputs {context, probs};
  // backward inputs {qkv, context, probs, d_context}.
  op.outputs.resize(2);
  op.inputs.resize(backward ? 4 : 1);
  return op;
}

// Attention dropout adds a pass over the scores to the unfused backward only when the op carries
// its mask and dropped probabilities: {qkv, context, probs, mask, dropped, d_context}.
TEST(GpuKernelModel, UnfusedBackwardPaysForDropoutOnlyWhenItHasAMask) {
  const DeviceProfile p = a100();
  ComputeOp plain = attention(false, true, 2048), dropped = plain;
  dropped.inputs.resize(6);
  const Seconds without = kernel_time(plain, p).seconds, with = kernel_time(dropped, p).seconds;
  EXPECT_GT(with, without);
  // The extra pass: read P and the mask's byte, write the dropped P, over every one of the s² scores.
  const double pass_bytes = 16.0 * 2048 * 2048 * (2 * 2 + 1);
  EXPECT_NEAR(with - without - p.launch_overhead_s,
              pass_bytes / (p.memory_bandwidth_bytes_per_s * p.gpu_kernels.memory_efficiency), 1e-9);
}

TEST(GpuKernelModel, ProfilesWithKernelConstantsLoadThem) {
  const DeviceProfile p = a100();
  ASSERT_TRUE(p.gpu_kernels.present());
  EXPECT_EQ(p.gpu_kernels.sm_count, 108);
  EXPECT_GT(p.gpu_kernels.gemm_efficiency, 0.5);
  EXPECT_LE(p.gpu_kernels.gemm_efficiency, 1.0);
  EXPECT_NE(p.basis_text().find("published"), std::string::npos);
}

TEST(GpuKernelModel, TheMeasuredGemmComesOutAsMeasured) {
  const DeviceProfile p = a100();
  const auto [m, n, k] = p.gpu_kernels.gemm_efficiency_shape;
  const ComputeOp op = gemm(m, n, k);
  const double measured = op.flops / (p.peak_bf16_flops_per_s * p.gpu_kernels.gemm_efficiency);
  EXPECT_NEAR(compute_cost(op, p).seconds - p.launch_overhead_s, measured, measured * 1e-9);
  // A larger, longer GEMM amortises its tiles' prologue and epilogue over more k-steps, up to the
  // measured best and no further (gemm_efficiency is the best of a sweep of shapes).
  const ComputeOp big = gemm(8192, 8192, 8192);
  const double at_measured = big.flops / (p.peak_bf16_flops_per_s * p.gpu_kernels.gemm_efficiency);
  EXPECT_LT(compute_cost(big, p).seconds, at_measured * 1.03);
  EXPECT_GE(compute_cost(big, p).seconds - p.launch_overhead_s, at_measured * (1 - 1e-12));
  // A weight-gradient GEMM of 32k tokens (k far longer than any shape measured) is held there too.
  const ComputeOp long_k = gemm(2304, 9216, 32768);
  const double long_k_at_measured = long_k.flops / (p.peak_bf16_flops_per_s * p.gpu_kernels.gemm_efficiency);
  EXPECT_GE(compute_cost(long_k, p).seconds - p.launch_overhead_s, long_k_at_measured * (1 - 1e-12));
}

TEST(GpuKernelModel, OneColumnOverATileMultipleCostsAnExtraWave) {
  const DeviceProfile p = a100();
  // 12 x 9 tiles of 256x128 fill the 108 SMs exactly once; k long enough to be compute-bound.
  const std::int64_t m = 256 * 12, n = 128 * 9, k = 8192;
  const GemmPlan exact = plan_gemm(m, n, k, 1, 0, DType::bf16, p);
  const GemmPlan over = plan_gemm(m, n + 1, k, 1, 0, DType::bf16, p);
  EXPECT_EQ(exact.waves, 1);
  EXPECT_GT(over.waves, exact.waves);
  // 0.1% more work, at least a third more time: a second wave of large tiles, or the finer
  // 128x128 tiling (3 waves of half-size tiles) that beats it.
  EXPECT_GE(compute_cost(gemm(m, n + 1, k), p).seconds, 1.4 * compute_cost(gemm(m, n, k), p).seconds);
}

// A GEMM's published speed, and the model's for it run back to back in a timed loop (the launch
// overhead hidden behind the previous GEMM): operands of `dtype`, fp16 output.
struct MeasuredGemm {
  std::int64_t m, n, k;
  double tflops;
};
double predicted_tflops(const DeviceProfile& p, const MeasuredGemm& g, DType dtype) {
  const double flops = 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k);
  const Bytes bytes = dtype_bytes(dtype) * static_cast<double>(g.m * g.k + g.k * g.n) + 2.0 * g.m * g.n;
  return flops / plan_gemm(g.m, g.n, g.k, 1, bytes, dtype, p, 2.0).seconds() / 1e12;
}
void expect_within_five_percent(const DeviceProfile& p, std::initializer_list<MeasuredGemm> published, DType dtype) {
  for (const MeasuredGemm& g : published) {
    const double predicted = predicted_tflops(p, g, dtype);
    EXPECT_NEAR(predicted / g.tflops, 1.0, 0.05) << g.m << "x" << g.n << "x" << g.k << ": " << predicted;
  }
}

// The tile model against published GEMM speeds it was not fitted to: cuBLASLt fp16 on random data
// after 10,000 warm-ups on an A100-SXM4-80GB (Azure/AI-benchmarking-guide,
// Azure_Results/ND_A100_v4_results.md at 8fd0c6e; CUDA 12.5). The profile's own constant is a
// different measurement (8192^3 through PyTorch, 2022). Every shape within 5% but 2048^3, which the
// model predicts 17% slow: its 256 tiles of 128x128 make 2.4 waves on 108 SMs, which cuBLAS avoids
// by a choice (split-k, another tile) the model does not make (validation/README.md).
TEST(GpuKernelModel, GemmShapesAgreeWithPublishedCublasLtMeasurements) {
  const DeviceProfile p = a100();
  expect_within_five_percent(p,
                             {{1024, 1024, 1024, 119.4},
                              {4096, 4096, 4096, 228.0},
                              {8192, 8192, 8192, 253.7},
                              {16384, 16384, 16384, 256.5},
                              {6144, 12288, 12288, 250.8}},
                             DType::fp16);
  // The known miss, stated above: a fix makes this fail.
  EXPECT_LT(predicted_tflops(p, {2048, 2048, 2048, 221.8}, DType::fp16), 0.9 * 221.8);
}

// FP8 GEMMs at their own fraction of the FP8 peak (gpu_kernels.fp8_gemm_efficiency), against the
// same published sweep on an H100 80GB HBM3: cuBLASLt E4M3 x E4M3 -> fp16 on uniform random data
// after 10,000 warm-ups (Azure/AI-benchmarking-guide, Azure_Results/ND_H100_v5_results.md at
// 8fd0c6e; CUDA 12.6). The 16-bit efficiency would put 8192^3 at 1,453 TFLOPS, 13% fast.
TEST(GpuKernelModel, Fp8GemmShapesAgreeWithPublishedCublasLtMeasurements) {
  const DeviceProfile p = find_device_profile("h100-sxm");
  ASSERT_GT(p.gpu_kernels.fp8_gemm_efficiency, 0.0);
  ASSERT_LT(p.gpu_kernels.fp8_gemm_efficiency, p.gpu_kernels.gemm_efficiency);
  expect_within_five_percent(p,
                             {{4096, 4096, 4096, 1216.9},
                              {8192, 8192, 8192, 1290.1},
                              {16384, 16384, 16384, 1377.3},
                              {32768, 32768, 32768, 1382.2},
                              {6144, 12288, 12288, 1351.4}},
                             DType::fp8);
}

TEST(GpuKernelModel, SmallTilesWinOnlyWhenTheyFillMoreOfAWave) {
  const DeviceProfile p = a100();
  // 64 x 64 tokens x features: one 256x128 tile would leave 107 SMs idle; 64x64 tiles use one SM
  // too, at half the speed of a large tile, but with a quarter of the padded work.
  const GemmPlan tiny = plan_gemm(64, 64, 4096, 1, 0, DType::bf16, p);
  EXPECT_EQ(tiny.tile.m, 64);
  EXPECT_EQ(tiny.tile.n, 64);
  EXPECT_DOUBLE_EQ(gemm_tile_efficiency({64, 64}), 0.5);
  EXPECT_DOUBLE_EQ(gemm_tile_efficiency({256, 128}), 1.0);
}

TEST(GpuKernelModel, AGemmWithAShortInnerDimensionCostsItsOutputNotItsFlops) {
  const DeviceProfile p = a100();
  const ComputeOp op = gemm(65536, 65536, 16);  // 137 GFLOP, an 8.6 GB output
  const double output_s = 65536.0 * 65536 * 2 / (p.memory_bandwidth_bytes_per_s * p.gpu_kernels.memory_efficiency);
  const double flops_s = op.flops / (p.peak_bf16_flops_per_s * p.gpu_kernels.gemm_efficiency);
  const Seconds t = compute_cost(op, p).seconds;
  EXPECT_GT(t, output_s);      // the epilogue writes C at the SMs' share of the bandwidth
  EXPECT_GT(t, 10 * flops_s);  // and the k = 16 main loop is a sliver of each tile's time
}

// 16-bit gradients beside an fp32 master are cast to fp32 before the step (Megatron-LM's
// main_param.grad = model_param.grad.float()), which then unscales, measures and reads them as
// fp32: the cast's 2 + 4 bytes, and the fp16 unscale, the norm and Adam read 4 instead of 2.
TEST(GpuKernelModel, SixteenBitGradientsAreCastToFp32BeforeTheStep) {
  const DeviceProfile p = a100();
  const auto step = [&](DType grad) {
    ComputeOp op;
    op.kind = OpKind::optimizer;
    OptimizerArgs args;
    args.numel = 1 << 26;
    op.args = args;
    op.inputs.resize(2);
    op.inputs[0].dtype = DType::fp16;
    op.inputs[1].dtype = grad;
    return compute_cost(op, p).seconds - p.launch_overhead_s;
  };
  const double per_byte = (1 << 26) / (p.memory_bandwidth_bytes_per_s * p.gpu_kernels.memory_efficiency);
  // fp32 grads: norm 4, Adam 4 + 24, copy 4 + 2, unscale 8.
  EXPECT_NEAR(step(DType::fp32), 46 * per_byte, 1e-12);
  EXPECT_NEAR(step(DType::fp16), (46 + 2 + 4) * per_byte, 1e-12);
}

TEST(GpuKernelModel, StreamingKernelsRunAtTheAchievableHbmFraction) {
  const DeviceProfile p = a100();
  const ComputeOp gelu = elementwise(ElementwiseFn::gelu, 1 << 26, false);
  EXPECT_DOUBLE_EQ(compute_cost(gelu, p).seconds,
                   p.launch_overhead_s + gelu.bytes / (p.memory_bandwidth_bytes_per_s * p.gpu_kernels.memory_efficiency));
}

TEST(GpuKernelModel, MegatronsFusionsAreCounted) {
  const DeviceProfile p = a100();
  const std::int64_t n = 1 << 26;
  // The bias add runs inside the GEMM epilogue or a fused bias-GeLU / bias-dropout-add kernel.
  EXPECT_DOUBLE_EQ(compute_cost(elementwise(ElementwiseFn::bias_add, n, false), p).seconds, 0.0);
  // Its backward (the bias gradient, a column sum) is a reduction of its own.
  EXPECT_GT(compute_cost(elementwise(ElementwiseFn::bias_add, n, true), p).seconds, 0.0);
  // Bias-dropout-add: the dropped branch is not written and read back, only the mask is written.
  const double mask_s = n / (p.memory_bandwidth_bytes_per_s * p.gpu_kernels.memory_efficiency);
  EXPECT_DOUBLE_EQ(compute_cost(elementwise(ElementwiseFn::dropout, n, false), p).seconds, mask_s);
}

TEST(GpuKernelModel, UnfusedAttentionComputesEveryScoreFlashOnlyTheCausalHalf) {
  const DeviceProfile p = a100();
  const ComputeOp unfused = attention(false, false, 4096);
  const ComputeOp flash = attention(true, false, 4096);
  // The op's FLOPs are the causal half; the unfused kernels multiply the whole s x s matrix.
  const double all_scores_s = 2 * unfused.flops / (p.peak_bf16_flops_per_s * p.gpu_kernels.gemm_efficiency);
  EXPECT_GT(compute_cost(unfused, p).seconds, all_scores_s);
  EXPECT_NEAR(compute_cost(flash, p).seconds,
              p.launch_overhead_s + flash.flops / (p.peak_bf16_flops_per_s * p.gpu_kernels.flash_fwd_efficiency),
              1e-9);
  EXPECT_LT(compute_cost(flash, p).seconds, compute_cost(unfused, p).seconds);
  // Backward: twice the FLOPs at the backward efficiency.
  const ComputeOp flash_bwd = attention(true, true, 4096);
  EXPECT_NEAR(compute_cost(flash_bwd, p).seconds,
              p.launch_overhead_s + flash_bwd.flops / (p.peak_bf16_flops_per_s * p.gpu_kernels.flash_bwd_efficiency),
              1e-9);
}

TEST(GpuKernelModel, ProfilesWithoutKernelConstantsKeepTheRoofline) {
  const DeviceProfile v100 = find_device_profile("v100-sxm2-32gb");
  ASSERT_FALSE(v100.gpu_kernels.present());
  const ComputeOp op = gemm(4096, 4096, 4096);
  const auto k = static_cast<int>(OpKind::gemm);
  EXPECT_DOUBLE_EQ(compute_cost(op, v100).seconds,
                   v100.launch_overhead_s + op.flops / (v100.peak_bf16_flops_per_s * v100.flop_efficiency[k]));
}

// FlashAttention's version prices the kernel: the A100 profile measures FlashAttention-2, and
// FlashAttention 1 runs at the profile's speed for it (half); each version pads a head to its
// kernels' head dims (v1: 32/64/128, v2: multiples of 32, v3: 64/96/128/192/256).
TEST(GpuKernelModel, AnOlderFlashAttentionRunsAtItsMeasuredSpeedOverItsKernelsPaddedHeadDim) {
  const DeviceProfile p = a100();
  ASSERT_EQ(p.gpu_kernels.flash_version, 2);
  ASSERT_DOUBLE_EQ(p.gpu_kernels.flash_previous_version_speed, 0.5);
  EXPECT_EQ(flash_kernel_head_dim(1, 96), 128);
  EXPECT_EQ(flash_kernel_head_dim(1, 64), 64);
  EXPECT_EQ(flash_kernel_head_dim(2, 80), 96);
  EXPECT_EQ(flash_kernel_head_dim(2, 128), 128);
  EXPECT_EQ(flash_kernel_head_dim(3, 80), 96);
  EXPECT_EQ(flash_kernel_head_dim(3, 160), 192);
  auto core_s = [&](const ComputeOp& op) { return compute_cost(op, p).seconds - p.launch_overhead_s; };
  // Head dim 128 pads nothing in either version: version 1 takes twice as long.
  EXPECT_NEAR(core_s(attention(true, false, 4096, 128, 1)), 2 * core_s(attention(true, false, 4096, 128, 2)), 1e-12);
  // The profile's own version is what version 0 means.
  EXPECT_DOUBLE_EQ(core_s(attention(true, true, 4096, 128, 0)), core_s(attention(true, true, 4096, 128, 2)));
  // Head dim 96: version 1 computes it at 128, version 2 at 96.
  EXPECT_NEAR(core_s(attention(true, false, 4096, 96, 1)), 2 * 128.0 / 96 * core_s(attention(true, false, 4096, 96, 2)),
              1e-12);
  // Head dim 80: version 2 computes it at 96.
  const ComputeOp h80 = attention(true, false, 4096, 80, 2);
  EXPECT_NEAR(core_s(h80), 96.0 / 80 * h80.flops / (p.peak_bf16_flops_per_s * p.gpu_kernels.flash_fwd_efficiency), 1e-12);
}

ComputeOp loss(bool fused, bool backward, std::int64_t tokens, std::int64_t vocab) {
  ComputeOp op;
  op.kind = OpKind::loss;
  LossArgs a{tokens, vocab, backward};
  a.fused = fused;
  op.args = a;
  op.inputs.push_back(Tensor{0, {tokens, vocab}, DType::bf16});  // the 16-bit logits
  return op;
}

// Megatron's cross-entropy makes fp32 passes over the logits (38 bytes per logit forward, 14
// backward, from 16-bit logits); a fused kernel reads them once forward and reads and writes
// them once backward.
TEST(GpuKernelModel, AFusedCrossEntropyMovesTheLogitsOncePerPass) {
  const DeviceProfile p = a100();
  const std::int64_t tokens = 8192, vocab = 50304;
  const double logits = static_cast<double>(tokens) * vocab;
  const double bandwidth = p.memory_bandwidth_bytes_per_s * p.gpu_kernels.memory_efficiency;
  auto pass_s = [&](bool fused, bool backward) {
    return compute_cost(loss(fused, backward, tokens, vocab), p).seconds - p.launch_overhead_s;
  };
  EXPECT_NEAR(pass_s(false, false), logits * 38 / bandwidth, 1e-9);
  EXPECT_NEAR(pass_s(true, false), logits * 2 / bandwidth, 1e-9);
  EXPECT_NEAR(pass_s(false, true), logits * 14 / bandwidth, 1e-9);
  EXPECT_NEAR(pass_s(true, true), logits * 4 / bandwidth, 1e-9);
}

// The twelve GEMMs of TE's guide layer (hidden 4,096, MLP 16,384, 15,872 tokens: forward, input
// gradients, weight gradients) on the H200 profile, in bf16 or FP8, their seconds summed.
constexpr std::int64_t kGuideTokens = 15872, kGuideHidden = 4096, kGuideMlp = 16384;
double guide_layer_gemm_seconds(bool fp8) {
  const DeviceProfile p = find_device_profile("h200-sxm");
  const std::int64_t tokens = kGuideTokens, h = kGuideHidden, f = kGuideMlp;
  struct Shape {
    std::int64_t m, n, k;
    bool weight_gradient;
  };
  const Shape layer[] = {{tokens, 3 * h, h, false}, {tokens, h, h, false}, {tokens, f, h, false}, {tokens, h, f, false},
                         {tokens, h, 3 * h, false}, {tokens, h, h, false}, {tokens, h, f, false}, {tokens, f, h, false},
                         {h, 3 * h, tokens, true},  {h, h, tokens, true},  {h, f, tokens, true},  {f, h, tokens, true}};
  double seconds = 0;
  for (const Shape& s : layer) {
    ComputeOp op = gemm(s.m, s.n, s.k);
    op.inputs = {Tensor{0, {s.m, s.k}, DType::bf16}, Tensor{1, {s.k, s.n}, DType::bf16}};
    op.outputs = {Tensor{2, {s.m, s.n}, DType::bf16}};
    if (fp8) {
      auto& args = std::get<GemmArgs>(op.args);
      args.fp8_a = args.fp8_b = Fp8Format::e4m3;
      args.accumulate = s.weight_gradient;  // a weight gradient reads the cast transposes
      op.compute_dtype = DType::fp8;
    }
    seconds += compute_cost(op, p).seconds;
  }
  return seconds;
}

// Transformer Engine's FP8 GEMMs read one-byte operands after a cast-transpose of their own (the
// input forward, the output gradient in the data gradient; the weight gradient reuses both, the
// weights are cast once per iteration). TE's GEMM profiling guide measured one layer's twelve GEMMs
// (hidden 4,096, MLP 16,384, 15,872 tokens) on an H200 NVL: FP8 delayed scaling 1.69x over BF16
// with its quantization in every call, weights included, and FP8 1.90x pre-quantized (current
// scaling, kernels alone). A training step's FP8 layer, which casts its weights once per
// iteration, lies between the two.
TEST(GpuKernelModel, Fp8LayerGemmsSpeedUpBetweenTransformerEnginesQuantizedAndRawMeasurements) {
  const double bf16_s = guide_layer_gemm_seconds(false), fp8_s = guide_layer_gemm_seconds(true);
  EXPECT_GT(bf16_s / fp8_s, 1.69 * 0.97);
  EXPECT_LT(bf16_s / fp8_s, 1.90);
}

// The same guide's bf16 GEMMs (docs/examples/gemm_profiling/gemm_profiling.rst at d0067d0, "Worked
// Example: 5B Model on H200", pre-quantized mode: kernels alone): 31.968 ms per layer on an H200
// NVL, 599.8 TFLOP/s, 0.718 of that part's dense bf16 peak (835). The profile's sustained
// fraction (0.738 at 8192^3, from a different tool and part: gpu-fryer on an H100 SXM) through the
// tile model gives these realistic shapes within 5% of it (0.731): the Hopper bf16 GEMMs are not
// where the H100 rows' lean is.
TEST(GpuKernelModel, Bf16LayerGemmsRunAtTransformerEnginesMeasuredFractionOfThePeak) {
  const double flops = 3 * 2.0 * kGuideTokens * kGuideHidden * (3 * kGuideHidden + kGuideHidden + 2 * kGuideMlp);
  const double measured_fraction = flops / 31.968e-3 / 835e12;
  const double predicted_fraction =
      flops / guide_layer_gemm_seconds(false) / find_device_profile("h200-sxm").peak_flops_per_s(DType::bf16);
  EXPECT_NEAR(measured_fraction, 0.718, 0.001);
  EXPECT_NEAR(predicted_fraction / measured_fraction, 1.0, 0.05);
}

// PyTorch's embedding backward builds a dense gradient of the whole table (zero fill, scatter,
// add into the weight's gradient buffer): a vocabulary of 131,072 x 2,048 costs the same whether a
// micro-batch holds 1,024 tokens or 4,096, beyond the rows it scatters, and more than its rows.
TEST(GpuKernelModel, AnEmbeddingBackwardWritesAndAddsTheWholeTable) {
  const DeviceProfile p = a100();
  const double bandwidth = p.memory_bandwidth_bytes_per_s * p.gpu_kernels.memory_efficiency;
  auto backward = [&](std::int64_t tokens, DType gradient) {
    ComputeOp op;
    op.kind = OpKind::embedding;
    const EmbeddingArgs args{tokens, 131072, 2048, 0, true};
    op.args = args;
    op.bytes = ops::embedding_cost(args, DType::bf16).bytes;
    op.inputs = {Tensor{0, {tokens, 2048}, DType::bf16}, Tensor{1, {tokens}, DType::int32}};
    op.outputs = {Tensor{2, {131072, 2048}, gradient}};
    return std::pair{compute_cost(op, p).seconds, op.bytes};
  };
  const double table = 131072.0 * 2048;
  // bf16 rows into an fp32 main gradient: zero fill 2, read 2, add 4 + 4 bytes per table element.
  for (std::int64_t tokens : {1024, 4096}) {
    const auto [seconds, row_bytes] = backward(tokens, DType::fp32);
    EXPECT_NEAR(seconds, 3 * p.launch_overhead_s + (row_bytes + table * 12) / bandwidth, 1e-12) << tokens;
  }
  // fp16 gradients added by AccumulateGrad: 2 + 2 + 2 + 2.
  const auto [seconds, row_bytes] = backward(4096, DType::bf16);
  EXPECT_NEAR(seconds, 3 * p.launch_overhead_s + (row_bytes + table * 8) / bandwidth, 1e-12);
}

// PyTorch AMP (TrainingConfig::autocast): a forward GEMM first casts its fp32 weight [k, n] to 16
// bits (6 bytes per element, a kernel of its own); a weight gradient [m, n] leaves in 16 bits and
// is cast to fp32 and accumulated into .grad (6 + 12 bytes, two kernels).
TEST(GpuKernelModel, AutocastPricesTheWeightCastAndTheGradientCastAndAccumulate) {
  const DeviceProfile p = a100();
  const double bandwidth = p.memory_bandwidth_bytes_per_s * p.gpu_kernels.memory_efficiency;
  ComputeOp fwd = gemm(8192, 7680, 2560);
  ComputeOp amp_fwd = fwd;
  std::get<GemmArgs>(amp_fwd.args).weight_pass = GemmArgs::WeightPass::weight_cast;
  EXPECT_NEAR(compute_cost(amp_fwd, p).seconds - compute_cost(fwd, p).seconds,
              p.launch_overhead_s + 2560.0 * 7680 * 6 / bandwidth, 1e-12);
  // A data gradient reuses the forward's cast.
  ComputeOp dgrad = fwd;
  std::get<GemmArgs>(dgrad.args).weight_pass = GemmArgs::WeightPass::none;
  EXPECT_DOUBLE_EQ(compute_cost(dgrad, p).seconds, compute_cost(fwd, p).seconds);
  // The weight gradient: its epilogue writes 16 bits instead of accumulating fp32, then two passes.
  GemmArgs w{2560, 7680, 8192};
  w.accumulate = true;
  ComputeOp wgrad = gemm(2560, 7680, 8192);
  wgrad.args = w;
  wgrad.outputs.push_back(Tensor{0, {2560, 7680}, DType::fp32});
  ComputeOp amp_wgrad = wgrad;
  std::get<GemmArgs>(amp_wgrad.args).weight_pass = GemmArgs::WeightPass::grad_cast_add;
  const double passes_s = 2 * p.launch_overhead_s + 2560.0 * 7680 * 18 / bandwidth;
  EXPECT_GT(compute_cost(amp_wgrad, p).seconds, compute_cost(wgrad, p).seconds);
  EXPECT_LT(compute_cost(amp_wgrad, p).seconds, compute_cost(wgrad, p).seconds + passes_s);
  EXPECT_GT(compute_cost(amp_wgrad, p).seconds, compute_cost(wgrad, p).seconds + 0.5 * passes_s);
  // Megatron-LM before its gradient-accumulation fusion: one add of the 16-bit gradient into the
  // fp32 main gradient (2 + 4 + 4 bytes), cheaper than a cast then an add.
  ComputeOp add_wgrad = wgrad;
  std::get<GemmArgs>(add_wgrad.args).weight_pass = GemmArgs::WeightPass::grad_add;
  const double add_s = p.launch_overhead_s + 2560.0 * 7680 * 10 / bandwidth;
  EXPECT_GT(compute_cost(add_wgrad, p).seconds, compute_cost(wgrad, p).seconds);
  EXPECT_LT(compute_cost(add_wgrad, p).seconds, compute_cost(wgrad, p).seconds + add_s);
  EXPECT_LT(compute_cost(add_wgrad, p).seconds, compute_cost(amp_wgrad, p).seconds);
}

}  // namespace
}  // namespace tandem::sim::gpu

