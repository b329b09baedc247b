// Training that diverges (exec/cpu/diverged.hpp): the first NaN or infinite loss stops the run
// with one DivergedError naming the iteration, the rank and the micro-batch, instead of a run
// that prints NaN losses and succeeds.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "exec/cpu/cpu_run.hpp"
#include "exec/cpu/diverged.hpp"
#include "strategies/data_parallel.hpp"
#include "strategies/models/mlp.hpp"

namespace tandem::exec::cpu {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(RequireFiniteLosses, NamesTheFirstNonFiniteLossOfTheIterationWithRankAndMicroBatch) {
  const std::vector<LossRecord> losses{{4, 8, 2.5f}, {4, 9, kInf}, {4, 10, kNaN}};
  try {
    require_finite_losses(3, 4, losses);
    FAIL() << "an infinite loss was let through";
  } catch (const DivergedError& e) {
    EXPECT_EQ(e.rank(), 3);
    EXPECT_EQ(e.iteration(), 4);
    EXPECT_EQ(e.micro_batch(), 9);
    const std::string what = e.what();
    EXPECT_NE(what.find("iteration 4 (micro-batch 9) is inf on rank 3"), std::string::npos) << what;
  }
}

TEST(RequireFiniteLosses, LooksOnlyAtTheIterationAskedFor) {
  // Iteration 2's NaN was the business of iteration 2's check; iteration 3 is finite.
  EXPECT_NO_THROW(require_finite_losses(0, 3, {{2, 0, kNaN}, {3, 1, 1.0f}, {3, 2, 0.5f}}));
  EXPECT_NO_THROW(require_finite_losses(0, 3, {}));
  EXPECT_THROW(require_finite_losses(0, 3, {{2, 0, 1.0f}, {3, 1, -kInf}}), DivergedError);
}

TEST(RequireFiniteLosses, AMeanOverTheRanksSaysSo) {
  const DivergedError e(1, 7, -1, std::nan(""));
  EXPECT_NE(std::string(e.what()).find("iteration 7 is nan (the mean over the ranks, seen by rank 1)"),
            std::string::npos)
      << e.what();
}

// An MLP whose initial weights are far beyond fp32's comfort (std 1e30): the first forward pass
// overflows, the loss of iteration 0 is not finite, and every rank stops there.
TEST(CpuRun, ANonFiniteLossStopsEveryRankAtThatIterationWithADivergedError) {
  MlpConfig config;
  config.input_size = 16;
  config.hidden_sizes = {32};
  config.output_size = 8;
  auto model = std::make_shared<MlpModel>(config);
  TrainingConfig training;
  training.global_batch_size = 4;
  training.micro_batch_size = 2;
  training.seq_length = 1;
  training.precision = DType::fp32;
  ParallelConfig parallel;
  parallel.data_parallel_size = 2;
  DataParallel strategy(model, training, parallel, {});
  RunOptions o;
  configure_for_model(o, *model, 1);
  o.iterations = 5;
  o.init_std = 1e30f;
  o.timeout_s = 30;
  int iterations_seen = 0;
  o.on_iteration = [&](const IterationStats&) { ++iterations_seen; };
  try {
    run_cpu(strategy, o);
    FAIL() << "the run went on through a non-finite loss";
  } catch (const DivergedError& e) {
    EXPECT_EQ(e.iteration(), 0);
    EXPECT_TRUE(e.rank() == 0 || e.rank() == 1) << e.what();
    EXPECT_NE(std::string(e.what()).find("training diverged"), std::string::npos) << e.what();
  }
  EXPECT_EQ(iterations_seen, 0) << "no iteration after the bad one is reported";
}

}  // namespace
}  // namespace tandem::exec::cpu
