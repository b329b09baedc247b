// The restart formula tandem goodput charges and run --elastic predicts with: every part of a
// restart counted once, the warm-up and the lost iterations at the iteration time.
#include <gtest/gtest.h>

#include "sim/reliability/restart_cost.hpp"

namespace tandem::sim::reliability {
namespace {

TEST(RestartCost, ARestartIsItsPartsAndTheWarmupIterations) {
  RestartCost cost;
  cost.stop_s = 0.25;
  cost.relaunch_s = 300;
  cost.init_s = 120;
  cost.reload_s = 40;
  cost.warmup_iterations = 2;
  EXPECT_DOUBLE_EQ(restart_s(cost, 5.0), 0.25 + 300 + 120 + 40 + 2 * 5.0);
}

TEST(RestartCost, RecoveryAddsTheLostIterationsTrainedAgain) {
  RestartCost cost;
  cost.relaunch_s = 1.5;
  EXPECT_DOUBLE_EQ(recovered_s(cost, 0.01, 0), 1.5);
  EXPECT_DOUBLE_EQ(recovered_s(cost, 0.01, 4), 1.5 + 4 * 0.01);
  cost.warmup_iterations = 1;
  EXPECT_DOUBLE_EQ(recovered_s(cost, 0.01, 4), 1.5 + 5 * 0.01);
}

}  // namespace
}  // namespace tandem::sim::reliability
