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

}  // namespace
}  // namespace tandem::cli
