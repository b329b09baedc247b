// Checkpoint costs through the modeled storage: bytes per parameter as ZeRO counts model states
// (less gradients), and the slower of a node's link and its share of the free aggregate.
#include "sim/reliability/checkpoint_cost.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "sim/reliability/checkpoint_interval.hpp"

namespace tandem::sim::reliability {
namespace {

TEST(CheckpointCost, ACheckpointHoldsWeightsAndAdamStateButNoGradients) {
  EXPECT_DOUBLE_EQ(checkpoint_bytes(175'000'000'000, DType::bf16), 175e9 * 14);
  EXPECT_DOUBLE_EQ(checkpoint_bytes(1'000, DType::fp32), 12'000);
}

TEST(CheckpointCost, FewNodesAreLimitedByTheirLinksManyByTheSharedStorage) {
  const StorageSystem storage{2000e9, 50e9, 0.5, 0.5};  // 1 TB/s free of 2 TB/s
  // 4 nodes: each at its own 50 GB/s (4 x 50 < 1,000).
  EXPECT_DOUBLE_EQ(storage_transfer_s(storage, 400e9, 4), 0.5 + 100e9 / 50e9);
  // 128 nodes: the free terabyte per second, shared.
  EXPECT_DOUBLE_EQ(storage_transfer_s(storage, 2.45e12, 128), 0.5 + 2.45e12 / 1000e9);
  EXPECT_THROW(storage_transfer_s({2000e9, 50e9, 0, 1.0}, 1e9, 1), std::invalid_argument);
}

TEST(CheckpointInterval, YoungAndDalyAgreeWhenCheckpointsAreCheapAndPartWhenNot) {
  EXPECT_DOUBLE_EQ(young_interval_s(60, 10800), std::sqrt(2 * 60 * 10800.0));
  EXPECT_NEAR(daly_interval_s(60, 10800) / young_interval_s(60, 10800), 1, 0.04);
  EXPECT_LT(daly_interval_s(1800, 3600) / young_interval_s(1800, 3600), 0.8);
  // Daly's expected goodput: no failures in reach -> tau / (tau + C).
  EXPECT_NEAR(daly_goodput(1000, 10, 0, 1e12), 1000.0 / 1010, 1e-6);
}

}  // namespace
}  // namespace tandem::sim::reliability
