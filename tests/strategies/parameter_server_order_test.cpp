// The order in which asynchronous parameter servers apply pushes (strategies/parameter_server_order.hpp):
// by the model's arrival times, each worker once per step, reproducible from the seed.
#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "strategies/parameter_server_order.hpp"

namespace tandem {
namespace {

TEST(ParameterServerOrder, EqualWorkersWithoutJitterTakeTurnsInRankOrder) {
  EXPECT_EQ(asynchronous_push_order({1.0, 1.0, 1.0}, 3, 0, 0), (std::vector<int>{0, 1, 2, 0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(asynchronous_push_order({0.5}, 2, 0, 7), (std::vector<int>{0, 0}));
  EXPECT_TRUE(asynchronous_push_order({1.0, 2.0}, 0, 0, 0).empty());
}

TEST(ParameterServerOrder, AWorkerTwiceAsFastIsServedTwiceAsOftenUntilItHasMadeItsSteps) {
  // Worker 0 arrives at 1, 2, 3, 4; worker 1 at 2, 4, 6, 8 (a tie goes to the lower rank).
  EXPECT_EQ(asynchronous_push_order({1.0, 2.0}, 4, 0, 0), (std::vector<int>{0, 0, 1, 0, 0, 1, 1, 1}));
}

TEST(ParameterServerOrder, JitterShufflesTheTurnsReproduciblyPerSeed) {
  const std::vector<double> steps(4, 1.0);
  const std::vector<int> a = asynchronous_push_order(steps, 20, 0.3, 1);
  EXPECT_EQ(a, asynchronous_push_order(steps, 20, 0.3, 1));  // same seed, same order
  EXPECT_NE(a, asynchronous_push_order(steps, 20, 0.3, 2));
  EXPECT_NE(a, asynchronous_push_order(steps, 20, 0.0, 1));
  // Every worker still makes every step, and some worker got two turns in a row somewhere.
  for (int w = 0; w < 4; ++w) EXPECT_EQ(std::count(a.begin(), a.end(), w), 20) << w;
  EXPECT_NE(std::adjacent_find(a.begin(), a.end()), a.end());
}

TEST(ParameterServerOrder, ImpossibleInputsAreRefused) {
  EXPECT_THROW(asynchronous_push_order({}, 1, 0, 0), std::invalid_argument);
  EXPECT_THROW(asynchronous_push_order({1.0, 0.0}, 1, 0, 0), std::invalid_argument);
  EXPECT_THROW(asynchronous_push_order({1.0}, 1, -0.1, 0), std::invalid_argument);
}

}  // namespace
}  // namespace tandem
