// The search's time left (cli/search_progress.hpp): the simulations to go weighed by their size
// at the rate the finished ones showed, not an average per candidate.
#include <gtest/gtest.h>

#include "cli/search_progress.hpp"

namespace tandem::cli {
namespace {

TEST(SearchProgress, TimeLeftWeighsTheSimulationsToGoByTheirSize) {
  search::SearchProgress p;
  p.evaluated = 4;
  p.done_size = 1000;              // four small candidates...
  p.done_simulation_wall_s = 20;   // ...took 20 s one after another: 0.02 s per unit
  p.remaining = 2;
  p.remaining_size = 9000;         // two large ones to go
  ASSERT_TRUE(seconds_for(p, p.remaining_size, 1).has_value());
  EXPECT_DOUBLE_EQ(*seconds_for(p, p.remaining_size, 1), 180.0);
  EXPECT_DOUBLE_EQ(*seconds_for(p, p.remaining_size, 2), 90.0) << "two workers share them";
  // A naive average would say 2 x 5 s: the sizes are what makes the estimate honest.
}

TEST(SearchProgress, NoRateBeforeTheFirstSimulationAndNothingLeftAtTheEnd) {
  search::SearchProgress p;
  p.remaining = 10;
  p.remaining_size = 500;
  EXPECT_FALSE(seconds_for(p, p.remaining_size, 2).has_value());
  EXPECT_EQ(seconds_for(p, 0, 2), 0.0) << "nothing left";
}

}  // namespace
}  // namespace tandem::cli
