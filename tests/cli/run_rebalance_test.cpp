// The measured speeds `run --rebalance-after` re-splits the batch by (cli/run_rebalance.hpp): a
// replica is as fast as its slowest rank per sequence; ranks without a replica or work take the
// mean.
#include "cli/run_rebalance.hpp"

#include <gtest/gtest.h>

namespace tandem::cli {
namespace {

TEST(RunRebalance, AReplicaIsAsFastAsItsSlowestRankPerSequence) {
  // Two replicas of two pipeline stages; replica 1's stage 1 computes 3x longer; 8 sequences
  // each over 2 iterations.
  const std::vector<RankRole> roles{{0, 0, 2, 8}, {1, 0, 2, 8}, {0, 1, 2, 8}, {1, 1, 2, 8}};
  const std::vector<double> speeds = replica_speeds(roles, {1.6, 1.6, 1.6, 4.8}, 2);
  ASSERT_EQ(speeds.size(), 4u);
  EXPECT_DOUBLE_EQ(speeds[0], 10.0);  // 16 sequences in 1.6 s
  EXPECT_DOUBLE_EQ(speeds[1], 10.0);
  EXPECT_DOUBLE_EQ(speeds[2], 16.0 / 4.8);
  EXPECT_DOUBLE_EQ(speeds[3], 16.0 / 4.8);
}

TEST(RunRebalance, RanksWithoutAReplicaOrWorkTakeTheMeanSpeed) {
  const std::vector<RankRole> roles{{0, 0, 2, 8}, {0, -1, 2, -1}, {0, 3, 2, 0}};
  const std::vector<double> speeds = replica_speeds(roles, {2.0, 1.0, 1.0}, 1);
  EXPECT_DOUBLE_EQ(speeds[0], 4.0);
  EXPECT_DOUBLE_EQ(speeds[1], 4.0);
  EXPECT_DOUBLE_EQ(speeds[2], 4.0);
  EXPECT_THROW(replica_speeds({{0, 0, 2, 8}}, {0.0}, 1), std::runtime_error);  // nothing measured
}

// A pipeline stage is as fast as its slowest rank per layer and sequence: stage 1 (2 layers)
// computing as long as stage 0 (6 layers) is 3x slower per layer.
TEST(RunRebalance, AStageIsAsFastAsItsSlowestRankPerLayer) {
  const std::vector<RankRole> roles{{0, 0, 6, 8}, {1, 0, 2, 8}};
  const std::vector<double> speeds = stage_speeds(roles, {1.2, 1.2}, 2);
  ASSERT_EQ(speeds.size(), 2u);
  EXPECT_DOUBLE_EQ(speeds[0], 6.0 * 16 / 1.2);
  EXPECT_DOUBLE_EQ(speeds[1], 2.0 * 16 / 1.2);
  EXPECT_THROW(stage_speeds(roles, {0.0, 0.0}, 1), std::runtime_error);  // nothing measured
}

// Two replicas of two stages of 4 layers; replica 1's stage 1 computes 3x longer. Stage 1's
// slowest per-layer speed is a third of stage 0's: the layers go 6/2 (whole chunks of 2 here),
// and each replica's pipeline is then as fast as its slowest stage: replica 0's stage 0 (6
// layers at 0.1 s) and replica 1's stages (6 x 0.1, 2 x 0.3): 0.6 s per sequence each, so the
// batch stays even.
TEST(RunRebalance, LayersMoveBySlowestStageAndTheBatchByEachReplicasPipelineAfterIt) {
  const std::vector<RankRole> roles{{0, 0, 4, 8}, {1, 0, 4, 8}, {0, 1, 4, 8}, {1, 1, 4, 8}};
  // Over 1 iteration, 3.2 s for 4 layers x 8 sequences: 0.1 s per layer and sequence.
  const LayersAndBatch split = split_layers_and_batch(roles, {3.2, 3.2, 3.2, 9.6}, 1, 2);
  EXPECT_EQ(split.layers_per_stage, (std::vector<int>{6, 2}));
  ASSERT_EQ(split.speeds.size(), 4u);
  for (double speed : split.speeds) EXPECT_NEAR(speed, 1.0 / 0.6, 1e-12);
  EXPECT_THROW(split_layers_and_batch(roles, {0, 0, 0, 0}, 1, 1), std::runtime_error);
}

}  // namespace
}  // namespace tandem::cli
