// A small GPT trains for real on the CPU backend under data parallelism with every gradient
// codec (strategies/compression/): the loss falls over a few AdamW steps, and a second run with
// the same seed gives the same losses bit for bit (the codecs are deterministic: top-k breaks
// ties by index, PowerSGD draws its Q from a seed every rank shares).
#include <gtest/gtest.h>

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "exec/cpu/cpu_run.hpp"
#include "strategies/data_parallel.hpp"
#include "tests/exec/cpu/hybrid_shape.hpp"
#include "tests/exec/cpu/train_losses.hpp"

namespace tandem::exec::cpu {
namespace {

constexpr int kSteps = 8;

struct CodecCase {
  const char* name;
  Compression type;
  double topk_ratio = 0.01;
  int rank = 1;
};

std::vector<double> train(const CodecCase& c) {
  auto model = testing::small_gpt("gpt-codec-test", 2, 64, 4, 256, 32);
  TrainingConfig training;
  training.global_batch_size = 8;
  training.micro_batch_size = 2;
  training.seq_length = 32;
  training.precision = DType::fp32;
  training.lr = 3e-3f;
  ParallelConfig parallel;
  parallel.data_parallel_size = 2;
  parallel.ddp_bucket_size = 30'000;  // several buckets, each with its own codec state
  parallel.gradient_compression.type = c.type;
  parallel.gradient_compression.topk_ratio = c.topk_ratio;
  parallel.gradient_compression.matrix_approximation_rank = c.rank;
  DataParallel strategy(model, training, parallel, {});
  return testing::train_losses(strategy, *model, kSteps, 32);
}

class CompressedTraining : public ::testing::TestWithParam<CodecCase> {};

TEST_P(CompressedTraining, LossFallsAndASecondRunRepeatsItBitForBit) {
  const std::vector<double> first = train(GetParam());
  std::cout << GetParam().name << ": loss " << first.front() << " -> " << first.back() << " in " << kSteps << " steps\n";
  ASSERT_EQ(first.size(), static_cast<std::size_t>(kSteps));
  EXPECT_LT(first.back(), first.front() - 0.1);
  EXPECT_EQ(train(GetParam()), first);
}

INSTANTIATE_TEST_SUITE_P(Codecs, CompressedTraining,
                         ::testing::Values(CodecCase{"fp16", Compression::fp16}, CodecCase{"bf16", Compression::bf16},
                                           CodecCase{"int8", Compression::int8},
                                           CodecCase{"onebit", Compression::one_bit},
                                           CodecCase{"topk", Compression::top_k, 0.05},
                                           CodecCase{"powerSGD", Compression::power_sgd, 0.01, 2}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace tandem::exec::cpu
