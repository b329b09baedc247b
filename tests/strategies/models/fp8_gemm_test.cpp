// FP8 training (training.fp8, Megatron-Core's --fp8-format): which GEMMs of a transformer run in
// FP8 and with which operand formats, and what it does to their cost: the blocks' linear layers
// (qkv, proj, fc1, fc2) forward, input-gradient and weight-gradient GEMMs in FP8, E4M3 operands,
// E5M2 for the gradient operand under "hybrid"; the output layer and attention stay in bf16.
#include <gtest/gtest.h>

#include <variant>

#include "strategies/models/presets.hpp"
#include "strategies/models/transformer.hpp"
#include "tests/strategies/models/model_test_util.hpp"

namespace tandem {
namespace {

using testing::Layers;
using testing::RecordedOp;
using testing::RecordingRuntime;

std::vector<RecordedOp> gemms_of_one_micro_batch(Fp8Recipe recipe) {
  BatchShape batch = testing::short_batch();
  batch.fp8 = recipe;
  return testing::gemms_of_one_micro_batch(TransformerModel(transformer_preset("gpt3-1.3b")), batch);
}

const GemmArgs& args_of(const RecordedOp& op) { return std::get<GemmArgs>(op.args); }

TEST(Fp8Gemms, HybridRunsTheLinearLayersInFp8WithE5M2Gradients) {
  int fp8 = 0;
  for (const RecordedOp& op : gemms_of_one_micro_batch(Fp8Recipe::hybrid)) {
    const GemmArgs& a = args_of(op);
    const bool linear = op.label.find("attn.qkv") != std::string::npos || op.label.find("attn.proj") != std::string::npos ||
                        op.label.find("mlp.fc") != std::string::npos;
    EXPECT_EQ(a.fp8(), linear) << op.label;
    if (!linear) continue;
    ++fp8;
    if (op.phase == Phase::forward) {
      EXPECT_EQ(a.fp8_a, Fp8Format::e4m3) << op.label;
      EXPECT_EQ(a.fp8_b, Fp8Format::e4m3) << op.label;
    } else {
      // One operand of every backward GEMM is a gradient (E5M2), the other a weight or an input (E4M3).
      EXPECT_NE(a.fp8_a, a.fp8_b) << op.label;
    }
  }
  EXPECT_EQ(fp8, 24 * 4 * 3) << "24 blocks x 4 linear layers x (forward, input gradient, weight gradient)";
}

TEST(Fp8Gemms, E4M3RecipeUsesE4M3Everywhere) {
  for (const RecordedOp& op : gemms_of_one_micro_batch(Fp8Recipe::e4m3)) {
    const GemmArgs& a = args_of(op);
    if (!a.fp8()) continue;
    EXPECT_EQ(a.fp8_a, Fp8Format::e4m3) << op.label;
    EXPECT_EQ(a.fp8_b, Fp8Format::e4m3) << op.label;
  }
}

TEST(Fp8Gemms, SameFlopsFewerOperandBytesPlusTheCasts) {
  const auto plain = gemms_of_one_micro_batch(Fp8Recipe::none);
  const auto fp8 = gemms_of_one_micro_batch(Fp8Recipe::hybrid);
  ASSERT_EQ(plain.size(), fp8.size());
  for (std::size_t i = 0; i < plain.size(); ++i) {
    EXPECT_EQ(plain[i].flops, fp8[i].flops) << plain[i].label;
    if (!args_of(fp8[i]).fp8()) continue;
    // bf16 operands (2 bytes each read) become a cast (2 read + 1 written) and a 1-byte read.
    const GemmArgs& a = args_of(fp8[i]);
    const double operands = static_cast<double>(a.m) * a.k + static_cast<double>(a.k) * a.n;
    EXPECT_DOUBLE_EQ(fp8[i].bytes - plain[i].bytes, operands * (3 + 1 - 2)) << fp8[i].label;
  }
}

}  // namespace
}  // namespace tandem
