// FP8 training executed for real on the CPU backend (training.fp8): every FP8 GEMM multiplies its
// operands as rounded to E4M3 / E5M2 with per-tensor scales (kernels/cpu/fp8.hpp), so a small GPT
// trained in FP8 follows the fp32 run closely without repeating it, and repeats itself bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <vector>

#include "exec/cpu/cpu_run.hpp"
#include "strategies/data_parallel.hpp"
#include "tests/exec/cpu/hybrid_shape.hpp"
#include "tests/exec/cpu/train_losses.hpp"

namespace tandem::exec::cpu {
namespace {

constexpr int kSteps = 8;

std::vector<double> train(Fp8Recipe recipe) {
  auto model = testing::small_gpt("gpt-fp8-test", 2, 64, 4, 256, 32);
  TrainingConfig training;
  training.global_batch_size = 4;
  training.micro_batch_size = 2;
  training.seq_length = 32;
  training.precision = DType::fp32;
  training.lr = 3e-3f;
  training.fp8 = recipe;
  ParallelConfig parallel;
  parallel.data_parallel_size = 2;
  DataParallel strategy(model, training, parallel, {});
  return testing::train_losses(strategy, *model, kSteps, 32);
}

TEST(Fp8Training, HybridFp8FollowsFp32Closely) {
  const std::vector<double> fp32 = train(Fp8Recipe::none);
  const std::vector<double> fp8 = train(Fp8Recipe::hybrid);
  ASSERT_EQ(fp8.size(), static_cast<std::size_t>(kSteps));
  std::cout << "loss fp32 " << fp32.front() << " -> " << fp32.back() << ", fp8 hybrid " << fp8.front() << " -> "
            << fp8.back() << "\n";
  EXPECT_LT(fp8.back(), fp8.front() - 0.1) << "it trains";
  EXPECT_NE(fp8, fp32) << "the GEMMs saw rounded operands";
  for (int i = 0; i < kSteps; ++i) {
    ASSERT_TRUE(std::isfinite(fp8[i]));
    EXPECT_NEAR(fp8[i], fp32[i], 0.05 * fp32[i]) << "step " << i;
  }
}

TEST(Fp8Training, ASecondRunRepeatsItBitForBit) { EXPECT_EQ(train(Fp8Recipe::e4m3), train(Fp8Recipe::e4m3)); }

}  // namespace
}  // namespace tandem::exec::cpu
