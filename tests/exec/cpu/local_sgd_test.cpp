// Local SGD on the CPU backend (strategy.local_sgd_steps, data_parallel): replicas step on their
// own gradients and average every H steps. What holds for real: the first step sees the same
// model and data as synchronous data parallelism; later steps differ (the replicas moved apart);
// at the end, and in a checkpoint, the replicas hold one model (the run's global state refuses
// replicas that differ), and a run resumes from that checkpoint. Hierarchical local SGD: blocks of
// replicas reduce gradients every step and average with the other blocks every H steps.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <tuple>

#include "exec/cpu/cpu_run.hpp"
#include "tests/exec/cpu/gpt_tiny.hpp"
#include "strategies/data_parallel.hpp"
#include "strategies/models/presets.hpp"
#include "strategies/models/transformer.hpp"
#include "tests/exec/cpu/hybrid_shape.hpp"

namespace tandem::exec::cpu {
namespace {

using testing::gpt_tiny;

namespace fs = std::filesystem;

DataParallel strategy(int local_sgd_steps, float outer_lr = 1.0f, float outer_momentum = 0.0f, int dp = 2,
                      int block = 1) {
  const TrainingConfig training = testing::gpt_tiny_training(DType::bf16);
  ParallelConfig parallel;
  parallel.data_parallel_size = dp;
  parallel.local_sgd_steps = local_sgd_steps;
  parallel.local_sgd_group_size = block;
  parallel.outer_lr = outer_lr;
  parallel.outer_momentum = outer_momentum;
  return DataParallel(gpt_tiny(), training, parallel, {});
}

RunOptions options(int iterations) {
  RunOptions o;
  o.iterations = iterations;
  configure_for_model(o, *gpt_tiny(), 32);
  o.capture_parameters = true;
  o.record_trace = false;
  o.timeout_s = 30;
  return o;
}

TEST(LocalSgd, ReplicasStepApartAndEndAsOneModel) {
  const RunResult sync = run_cpu(strategy(1), options(5));
  const RunResult local = run_cpu(strategy(3), options(5));  // averaged after step 3, and at the end
  ASSERT_EQ(local.iterations.size(), 5u);
  EXPECT_DOUBLE_EQ(local.iterations[0].loss, sync.iterations[0].loss);  // same model, same data
  EXPECT_NE(local.iterations[1].loss, sync.iterations[1].loss);         // each replica stepped alone
  EXPECT_LT(local.iterations.back().loss, local.iterations.front().loss);
  EXPECT_FALSE(local.global_parameters.empty());  // assembled: every replica holds the same values
}

TEST(LocalSgd, ACheckpointHoldsTheAveragedModelAndResumes) {
  const fs::path path = fs::temp_directory_path() / ("tandem-local-sgd-" + std::to_string(::getpid()) + ".ck");
  RunOptions save = options(2);  // mid-period (H = 3): the checkpoint averages first
  save.checkpoint_path = path.string();
  ASSERT_NO_THROW(run_cpu(strategy(3), save));
  RunOptions resume = options(2);
  resume.resume_path = path.string();
  const RunResult resumed = run_cpu(strategy(3), resume);
  EXPECT_EQ(resumed.first_iteration, 2);
  EXPECT_FALSE(resumed.global_parameters.empty());
  fs::remove(path);
}

// DiLoCo: one period of H = 2 steps, then the outer step on the replicas' average. With
// momentum starting at 0 the first outer step moves the model lr·(1 + mu) times the way the plain
// average moved it from the start: theta = theta0 + lr·(1 + mu)·(average - theta0). theta0 comes
// from a run with lr 0.5 and no momentum (halfway: theta0 = 2·half - average).
TEST(LocalSgd, DiLoCosOuterStepMovesTheModelAlongTheAverageWithNesterovMomentum) {
  const auto average = run_cpu(strategy(2), options(2)).global_parameters;
  const auto half = run_cpu(strategy(2, 0.5f, 0.0f), options(2)).global_parameters;
  const RunResult diloco = run_cpu(strategy(2, 0.7f, 0.9f), options(2));
  ASSERT_FALSE(average.empty());
  ASSERT_EQ(diloco.global_parameters.size(), average.size());
  double moved = 0;
  for (const auto& [name, avg] : average) {
    const std::vector<float>& h = half.at(name);
    const std::vector<float>& got = diloco.global_parameters.at(name);
    for (std::size_t i = 0; i < avg.size(); ++i) {
      const double theta0 = 2.0 * h[i] - avg[i];
      const double want = theta0 + 0.7 * 1.9 * (avg[i] - theta0);
      ASSERT_NEAR(got[i], want, 1e-5 + 1e-5 * std::abs(want)) << name << "[" << i << "]";
      moved = std::max(moved, std::abs(avg[i] - theta0));
    }
  }
  EXPECT_GT(moved, 1e-4);  // the replicas did move: the comparison is not between initial values
}

// The field a strategy built with these knobs is refused at ("" when accepted).
std::string refused_field(int local_sgd_steps, float outer_lr, float outer_momentum, int dp = 2, int block = 1) {
  try {
    strategy(local_sgd_steps, outer_lr, outer_momentum, dp, block);
  } catch (const StrategyError& e) {
    return e.field();
  }
  return "";
}

TEST(LocalSgd, DiLoCoWithoutLocalSgdIsRefusedAtItsField) {
  EXPECT_EQ(refused_field(1, 0.7f, 0.9f), "strategy.outer_lr");
}

// The hybrid strategy's replicas are tensor-parallel (sequence-parallel) pairs: each pair steps
// alone, its partial gradients still summed inside it, and every rank averages with its peers.
TEST(LocalSgd, TensorParallelReplicasEndAsOneModel) {
  TrainingConfig training;
  training.seq_length = 32;
  training.lr = 1e-3f;
  const testing::HybridShape shape{.tp = 2, .dp = 2, .sp = true, .local_sgd_steps = 2};
  RunOptions o = options(3);
  configure_for_model(o, *testing::small_gpt("gpt-small-test", 2, 64, 4, 256, 32), 32);
  const RunResult r = run_cpu(*testing::make_hybrid(testing::small_gpt("gpt-small-test", 2, 64, 4, 256, 32), shape,
                                                    training, 20'000),
                              o);
  ASSERT_EQ(r.iterations.size(), 3u);
  EXPECT_LT(r.iterations.back().loss, r.iterations.front().loss);
  EXPECT_FALSE(r.global_parameters.empty());  // assembled: replicas equal, tensor shards consistent
}

// Hierarchical local SGD (strategy.local_sgd_group_size): a block of every replica reduces
// gradients every step, so it is synchronous data parallelism, step for step (its averages of
// equal models change nothing).
TEST(HierarchicalLocalSgd, ABlockOfEveryReplicaIsSynchronousDataParallelism) {
  const RunResult sync = run_cpu(strategy(1), options(5));
  const RunResult blocks = run_cpu(strategy(3, 1.0f, 0.0f, 2, 2), options(5));
  ASSERT_EQ(blocks.iterations.size(), 5u);
  for (std::size_t i = 0; i < 5; ++i) EXPECT_DOUBLE_EQ(blocks.iterations[i].loss, sync.iterations[i].loss) << i;
  ASSERT_EQ(blocks.global_parameters.size(), sync.global_parameters.size());
  for (const auto& [name, values] : sync.global_parameters) EXPECT_EQ(blocks.global_parameters.at(name), values) << name;
}

// Two blocks of two replicas: each block steps as one (its replicas' gradients reduced), apart
// from the other block until the average; unlike plain local SGD and synchronous DP, and one
// model at the end.
TEST(HierarchicalLocalSgd, BlocksStepTogetherAndApartFromEachOther) {
  const RunResult sync = run_cpu(strategy(1, 1.0f, 0.0f, 4), options(4));
  const RunResult alone = run_cpu(strategy(4, 1.0f, 0.0f, 4, 1), options(4));
  const RunResult blocks = run_cpu(strategy(4, 1.0f, 0.0f, 4, 2), options(4));
  ASSERT_EQ(blocks.iterations.size(), 4u);
  EXPECT_DOUBLE_EQ(blocks.iterations[0].loss, sync.iterations[0].loss);  // same model, same data
  EXPECT_NE(blocks.iterations[1].loss, sync.iterations[1].loss);
  EXPECT_NE(blocks.iterations[1].loss, alone.iterations[1].loss);
  EXPECT_LT(blocks.iterations.back().loss, blocks.iterations.front().loss);
  EXPECT_FALSE(blocks.global_parameters.empty());  // assembled: every replica holds the same values
}

TEST(HierarchicalLocalSgd, BlocksThatDoNotDivideTheReplicasOrWithoutLocalSgdAreRefusedAtTheirField) {
  for (const auto& [steps, dp, block] : {std::tuple{2, 4, 3}, std::tuple{1, 4, 2}, std::tuple{2, 2, 4}})
    EXPECT_EQ(refused_field(steps, 1.0f, 0.0f, dp, block), "strategy.local_sgd_group_size")
        << "H=" << steps << " dp=" << dp << " block=" << block;
}

// The hybrid strategy: blocks of tensor-parallel replica pairs, with sequence parallelism.
TEST(HierarchicalLocalSgd, HybridBlocksOfEveryReplicaAreSynchronous) {
  TrainingConfig training;
  training.seq_length = 32;
  training.lr = 1e-3f;
  RunOptions o = options(3);
  auto model = testing::small_gpt("gpt-small-test", 2, 64, 4, 256, 32);
  configure_for_model(o, *model, 32);
  const RunResult sync = run_cpu(*testing::make_hybrid(model, {.tp = 2, .dp = 2, .sp = true}, training, 20'000), o);
  const RunResult blocks = run_cpu(
      *testing::make_hybrid(model, {.tp = 2, .dp = 2, .sp = true, .local_sgd_steps = 2, .local_sgd_group_size = 2},
                            training, 20'000),
      o);
  ASSERT_EQ(blocks.iterations.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_DOUBLE_EQ(blocks.iterations[i].loss, sync.iterations[i].loss) << i;
}

}  // namespace
}  // namespace tandem::exec::cpu
