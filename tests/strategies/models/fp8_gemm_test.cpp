// FP8 training (training.fp8, Megatron-Core's --fp8-format): which GEMMs of a transformer run in
// FP8 and with which operand formats, and what it does to their cost: the blocks' linear layers
// (qkv, proj, fc1, fc2) forward, input-gradient and weight-gradient GEMMs in FP8, E4M3 operands,
// E5M2 for the gradient operand under "hybrid"; the output layer and attention stay in bf16.
#include <gtest/gtest.h>

#include <map>
#include <string>
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
    // bf16 operands (2 bytes each read) become a cast (2 read + 1 written) and a 1-byte read; an
    // operand already in FP8 (the norm's output before qkv and fc1) is read at 1 byte and
    // "cast" in place (1 read + 1 written).
    const GemmArgs& a = args_of(fp8[i]);
    const double a_elements = static_cast<double>(a.m) * a.k, b_elements = static_cast<double>(a.k) * a.n;
    const double a_bytes = dtype_bytes(fp8[i].inputs[0].dtype), b_bytes = dtype_bytes(fp8[i].inputs[1].dtype);
    EXPECT_DOUBLE_EQ(fp8[i].bytes - plain[i].bytes, a_elements * (a_bytes + 1 + 1 - 2) + b_elements * (b_bytes + 1 + 1 - 2))
        << fp8[i].label;
  }
}

// With sequence parallelism Transformer Engine gathers a block linear's FP8 input shard: the
// all-gathers before qkv and fc1 (forward, and the backward's re-gather for the weight gradient)
// move one byte per element under FP8, two in bf16; the output layer's gather stays 16-bit.
TEST(Fp8Gemms, SequenceParallelGathersOfABlockLinearsInputMoveOneBytePerElement) {
  auto gathers = [](Fp8Recipe recipe) {
    BatchShape batch = testing::short_batch();
    batch.fp8 = recipe;
    ParallelContext ctx;
    ctx.tp_size = 2;
    ctx.sequence_parallel = true;
    ctx.tp_group.id = 3;
    ctx.tp_group.ranks = {0, 1};
    const TransformerModel model(transformer_preset("gpt3-1.3b"));
    RecordingRuntime rt;
    Layers layers = model.build_layers(batch, ctx);
    testing::allocate_all(rt, layers);
    testing::run_micro_batch(rt, model, layers, batch, 0);
    std::map<std::string, DType> dtype_of;
    for (const RecordedOp& op : rt.ops())
      if (op.is_comm && op.kind == OpKind::all_gather && !op.bucket.empty()) dtype_of[op.label] = op.bucket[0].dtype;
    return dtype_of;
  };
  const auto plain = gathers(Fp8Recipe::none);
  const auto fp8 = gathers(Fp8Recipe::hybrid);
  ASSERT_EQ(plain.size(), fp8.size());
  int one_byte = 0;
  for (const auto& [label, dtype] : fp8) {
    EXPECT_EQ(plain.at(label), DType::bf16) << label;
    const bool block_input = label.find("attn.qkv") != std::string::npos || label.find("mlp.fc1") != std::string::npos;
    EXPECT_EQ(dtype, block_input ? DType::fp8 : DType::bf16) << label;
    one_byte += block_input;
  }
  EXPECT_EQ(one_byte, 24 * 2 * 2) << "24 blocks x (qkv, fc1) x (forward gather, backward re-gather)";
}

}  // namespace
}  // namespace tandem
