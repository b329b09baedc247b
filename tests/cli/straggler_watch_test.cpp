// run's live straggler watch: a rank whose kernels take twice its peers' median three measured
// iterations in a row is named once; a single slow iteration, warm-up, or balanced ranks are not.
#include "cli/straggler_watch.hpp"

#include <gtest/gtest.h>

namespace tandem::cli {
namespace {

exec::cpu::IterationStats iteration(int i, std::vector<Seconds> kernels, bool warmup = false) {
  exec::cpu::IterationStats s;
  s.iteration = i;
  s.warmup = warmup;
  s.rank_kernels_s = std::move(kernels);
  return s;
}

TEST(StragglerWatch, ARankTwiceItsPeersMedianThreeTimesInARowIsNamedOnce) {
  StragglerWatch watch;
  EXPECT_FALSE(watch.observe(iteration(0, {1.0, 3.0, 1.1, 0.9})));
  EXPECT_FALSE(watch.observe(iteration(1, {1.0, 3.0, 1.0, 1.0})));
  const auto named = watch.observe(iteration(2, {1.0, 3.0, 1.0, 1.0}));
  ASSERT_TRUE(named);
  EXPECT_NE(named->find("rank 1: kernels 3.00x its peers' median for 3 iterations, from iteration 0"), std::string::npos)
      << *named;
  EXPECT_FALSE(watch.observe(iteration(3, {1.0, 3.0, 1.0, 1.0})));  // once
  EXPECT_FALSE(watch.observe(iteration(4, {1.0, 1.0, 1.0, 1.0})));  // back to speed
  watch.observe(iteration(5, {1.0, 2.5, 1.0, 1.0}));
  watch.observe(iteration(6, {1.0, 2.5, 1.0, 1.0}));
  EXPECT_TRUE(watch.observe(iteration(7, {1.0, 2.5, 1.0, 1.0})));  // slow again: named again
}

TEST(StragglerWatch, NoiseWarmUpAndBalancedRanksAreNotNamed) {
  StragglerWatch watch;
  EXPECT_FALSE(watch.observe(iteration(0, {1.0, 5.0}, true)));
  EXPECT_FALSE(watch.observe(iteration(1, {1.0, 5.0}, true)));
  EXPECT_FALSE(watch.observe(iteration(2, {1.0, 5.0})));  // warm-up does not count toward the three
  EXPECT_FALSE(watch.observe(iteration(3, {1.0, 1.0})));  // one slow iteration, then not
  for (int i = 4; i < 10; ++i) EXPECT_FALSE(watch.observe(iteration(i, {1.0, 1.9})));  // below twice
  EXPECT_FALSE(watch.observe(iteration(10, {1.0})));  // one rank has no peers
}

// Parameter servers do little compute: a worker is not slow for taking longer than a server, nor
// one pipeline stage for taking longer than a stage of other layers; workers among themselves are.
TEST(StragglerWatch, RanksOfAnotherKindOfWorkAreNoPeers) {
  // Two workers and a server, as DataParallel::rank_roles gives them.
  const std::vector<RankRole> roles = {{0, 0, -1, 4}, {0, 1, -1, 4}, {-1, -1, 0, 0}};
  StragglerWatch watch(StragglerWatch::classes_of(roles));
  EXPECT_EQ(StragglerWatch::classes_of(roles), (std::vector<int>{0, 0, 1}));
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(watch.observe(iteration(i, {1.0, 1.0, 0.01}))) << i;
  watch.observe(iteration(5, {1.0, 3.0, 0.01}));
  watch.observe(iteration(6, {1.0, 3.0, 0.01}));
  const auto named = watch.observe(iteration(7, {1.0, 3.0, 0.01}));
  ASSERT_TRUE(named);
  EXPECT_NE(named->find("rank 1: kernels 3.00x"), std::string::npos) << *named;
}

}  // namespace
}  // namespace tandem::cli
