// PyTorch AMP (training.autocast): which GEMMs of a transformer carry AMP's passes. Every forward
// GEMM of a weight (the blocks' linear layers and the output layer) casts its fp32 weight first,
// every weight gradient is cast and accumulated into the fp32 .grad after it, and the input
// gradients and the attention GEMMs carry none. Without autocast no GEMM does. The weights are fp32.
#include <gtest/gtest.h>

#include <variant>

#include "strategies/models/presets.hpp"
#include "strategies/models/transformer.hpp"
#include "strategies/strategy.hpp"
#include "tests/strategies/models/model_test_util.hpp"

namespace tandem {
namespace {

using testing::RecordedOp;

std::vector<RecordedOp> gemms(bool autocast, GradAccumulation accumulation = GradAccumulation::fused) {
  BatchShape batch = testing::short_batch();
  batch.autocast = autocast;
  batch.grad_accumulation = autocast ? GradAccumulation::cast_add : accumulation;
  return testing::gemms_of_one_micro_batch(TransformerModel(transformer_preset("gpt3-1.3b")), batch);
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

TEST(AutocastGemms, ForwardGemmsCastTheirWeightAndWeightGradientsAccumulateIntoFp32) {
  int casts = 0, grads = 0;
  for (const RecordedOp& op : gemms(true)) {
    const GemmArgs::WeightPass amp = std::get<GemmArgs>(op.args).weight_pass;
    if (ends_with(op.label, ".fwd")) {
      EXPECT_EQ(amp, GemmArgs::WeightPass::weight_cast) << op.label;
      ++casts;
    } else if (ends_with(op.label, ".bwd_w")) {
      EXPECT_EQ(amp, GemmArgs::WeightPass::grad_cast_add) << op.label;
      ++grads;
    } else {
      EXPECT_EQ(amp, GemmArgs::WeightPass::none) << op.label;
    }
  }
  EXPECT_EQ(casts, 24 * 4 + 1) << "24 blocks x 4 linear layers, and the output layer";
  EXPECT_EQ(grads, 24 * 4 + 1);
}

// Megatron-LM before 2022 (grad_accumulation: add): only the weight gradients carry a pass.
TEST(AutocastGemms, AnUnfusedAccumulationAddsEachWeightGradientAndCastsNoWeight) {
  int adds = 0;
  for (const RecordedOp& op : gemms(false, GradAccumulation::add)) {
    const bool weight_gradient = ends_with(op.label, ".bwd_w");
    EXPECT_EQ(std::get<GemmArgs>(op.args).weight_pass,
              weight_gradient ? GemmArgs::WeightPass::grad_add : GemmArgs::WeightPass::none)
        << op.label;
    adds += weight_gradient;
  }
  EXPECT_EQ(adds, 24 * 4 + 1);
}

TEST(AutocastGemms, WithoutAutocastNoGemmCarriesAmpsPasses) {
  for (const RecordedOp& op : gemms(false)) EXPECT_EQ(std::get<GemmArgs>(op.args).weight_pass, GemmArgs::WeightPass::none) << op.label;
}

// Under AMP a layer's parameters take 4 bytes (fp32) plus the 2 of the 16-bit copy its casts
// keep through a micro-batch; under Megatron's mixed precision 2 (the fp32 master is optimizer
// state).
TEST(AutocastGemms, AmpWeightsTakeTheirFp32ValuesAndTheir16BitCopy) {
  auto parameter_bytes = [](bool autocast) {
    BatchShape batch = testing::short_batch();
    batch.autocast = autocast;
    batch.param_dtype = autocast ? DType::fp32 : DType::bf16;
    const TransformerModel model(transformer_preset("gpt3-1.3b"));
    testing::RecordingRuntime rt;
    testing::Layers layers = model.build_layers(batch, ParallelContext{});
    testing::allocate_all(rt, layers);
    std::int64_t count = 0;
    for (const auto& layer : layers) count += layer->local_parameter_count();
    return std::pair(rt.current_bytes(MemCategory::parameters), count);
  };
  const auto [megatron, n] = parameter_bytes(false);
  const auto [amp, same_n] = parameter_bytes(true);
  ASSERT_EQ(n, same_n);
  EXPECT_DOUBLE_EQ(megatron, 2.0 * static_cast<double>(n));
  EXPECT_DOUBLE_EQ(amp, 6.0 * static_cast<double>(n));
}

// AMP holds fp32 weights and steps them directly (no master copy); the activations and the GEMMs'
// compute stay in the training precision. Megatron's mixed precision keeps 16-bit weights.
TEST(AutocastGemms, AutocastKeepsTheWeightsInFp32AndComputesIn16Bits) {
  TrainingConfig training;
  training.precision = DType::bf16;
  training.accumulate_allreduce_grads_in_fp32 = true;
  EXPECT_EQ(batch_shape_of(training).param_dtype, DType::bf16);
  EXPECT_EQ(batch_shape_of(training).grad_accumulation, GradAccumulation::fused);
  training.autocast = true;
  const BatchShape amp = batch_shape_of(training);
  EXPECT_EQ(amp.param_dtype, DType::fp32);
  EXPECT_EQ(amp.dtype, DType::bf16);
  EXPECT_EQ(amp.grad_dtype, DType::fp32);
  EXPECT_TRUE(amp.autocast);
  EXPECT_EQ(amp.grad_accumulation, GradAccumulation::cast_add);
}

}  // namespace
}  // namespace tandem
