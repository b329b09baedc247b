// Partition refinement (search.hpp, step 3) against an analytic three-stage pipeline: moving one
// layer at a time from the speed-proportional partition reaches the best of all partitions,
// never simulates one that cannot fit, stays within its budget, and runs only when asked.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "strategies/search/search.hpp"

namespace tandem::search {
namespace {

// Stages at speeds 3, 2, 1 (a mixed cluster's kinds, fastest first); the first stage also runs
// the embedding and the last the head and loss, so the speed-proportional partition is not the
// best one. Time: the slowest stage's load, plus a little of every stage's (so that one
// partition is best). A stage holds at most 8 layers (memory).
class StagesFake final : public Evaluator {
 public:
  static constexpr int kLayers = 12;

  static std::vector<int> layers_of(const Candidate& c) {
    if (!c.layers_per_stage.empty()) return c.layers_per_stage;
    if (c.partition == HybridConfig::Partition::proportional) return {6, 4, 2};
    return {4, 4, 4};
  }
  static double time_of(const std::vector<int>& layers) {
    const double speed[3] = {3, 2, 1}, extra[3] = {0.5, 0, 1.5};
    double slowest = 0, squares = 0;
    for (int s = 0; s < 3; ++s) {
      const double load = layers[s] / speed[s] + extra[s];
      slowest = std::max(slowest, load);
      squares += load * load;
    }
    return slowest + 0.01 * squares;
  }
  static double memory_fraction_of(const std::vector<int>& layers) {
    return *std::max_element(layers.begin(), layers.end()) / 8.5;
  }

  std::vector<Estimate> estimate(const std::vector<Candidate>& candidates) override {
    std::vector<Estimate> out;
    for (const Candidate& c : candidates) {
      Estimate e;
      e.valid = true;
      e.layers_per_stage = layers_of(c);
      e.iteration_time_s = 0.6 * time_of(e.layers_per_stage);
      e.memory_fraction = memory_fraction_of(e.layers_per_stage);
      out.push_back(e);
    }
    return out;
  }
  std::vector<Evaluation> evaluate(const std::vector<Candidate>& candidates) override {
    std::vector<Evaluation> out;
    for (const Candidate& c : candidates) {
      Evaluation e;
      e.ok = true;
      e.iteration_time_s = time_of(layers_of(c));
      e.memory_fraction = memory_fraction_of(layers_of(c));
      out.push_back(e);
    }
    return out;
  }
};

Enumeration uniform_and_proportional() {
  Enumeration space;
  Candidate c;
  c.pp = 3;
  space.candidates.push_back(c);
  c.partition = HybridConfig::Partition::proportional;
  space.candidates.push_back(c);
  space.combinations = 2;
  return space;
}

SearchSettings refined(int evaluations) {
  SearchSettings settings;
  settings.algorithm = Algorithm::exhaustive;
  settings.refine_evaluations = evaluations;
  settings.batch_size = 2;
  return settings;
}

TEST(SearchRefinement, LayerMovesReachTheBestOfAllPartitions) {
  double best_s = std::numeric_limits<double>::infinity();
  for (int a = 1; a < StagesFake::kLayers; ++a)
    for (int b = 1; a + b < StagesFake::kLayers; ++b) {
      const std::vector<int> layers{a, b, StagesFake::kLayers - a - b};
      if (StagesFake::memory_fraction_of(layers) <= 1) best_s = std::min(best_s, StagesFake::time_of(layers));
    }
  StagesFake fake;
  const SearchResult r = run_search(uniform_and_proportional(), fake, refined(20));
  ASSERT_FALSE(r.ranked.empty());
  const Scored& winner = r.ranked.front();
  EXPECT_DOUBLE_EQ(winner.value, best_s) << winner.candidate.key();
  EXPECT_LT(winner.value, StagesFake::time_of({6, 4, 2}));
  EXPECT_FALSE(winner.candidate.layers_per_stage.empty());
  for (const Scored& s : r.all) EXPECT_LE(StagesFake::memory_fraction_of(StagesFake::layers_of(s.candidate)), 1.0);
  EXPECT_LE(r.evaluated, 2 + 20);
}

TEST(SearchRefinement, RunsOnlyWhenAskedAndWithinItsBudget) {
  StagesFake fake;
  const SearchResult off = run_search(uniform_and_proportional(), fake, refined(0));
  EXPECT_EQ(off.evaluated, 2);
  for (const Scored& s : off.all) EXPECT_TRUE(s.candidate.layers_per_stage.empty());
  const SearchResult one = run_search(uniform_and_proportional(), fake, refined(1));
  EXPECT_EQ(one.evaluated, 3);
}

}  // namespace
}  // namespace tandem::search
