// Search algorithms against an analytic stand-in for the simulator: exhaustive search equals
// brute force, bounds never prune the optimum, guided search finds the exhaustive optimum on a
// small space, and the answer does not depend on how candidates are batched (workers).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "platforms/cluster.hpp"
#include "strategies/search/pareto.hpp"
#include "tests/strategies/search/fake_evaluator.hpp"
#include "tests/strategies/search/small_space.hpp"

namespace tandem::search {
namespace {

using test::FakeEvaluator;

using test::small_space;

// Every candidate evaluated, ranked by (value, canonical order): the answer by definition.
std::vector<Ranked> brute_force(const Enumeration& space, Objective objective, const Constraints& constraints) {
  FakeEvaluator fake;
  const auto evaluations = fake.evaluate(space.candidates);
  std::vector<Ranked> ranked;
  for (std::size_t i = 0; i < evaluations.size(); ++i) {
    const double v = objective_value(objective, evaluations[i], constraints);
    if (std::isfinite(v)) ranked.push_back({v, space.candidates[i]});
  }
  std::sort(ranked.begin(), ranked.end());
  return ranked;
}

std::vector<Ranked> ranked_of(const SearchResult& r) {
  std::vector<Ranked> out;
  for (const Scored& s : r.ranked) out.push_back({s.value, s.candidate});
  return out;
}

TEST(SearchAlgorithms, SmallSpaceIsLargeEnoughToMeanSomething) {
  EXPECT_GT(small_space().candidates.size(), 100u);
}

TEST(SearchAlgorithms, ExhaustiveTopKEqualsBruteForce) {
  const Enumeration space = small_space();
  for (Objective objective : {Objective::time, Objective::cost, Objective::energy}) {
    SCOPED_TRACE(to_string(objective));
    SearchSettings settings;
    settings.objective = objective;
    settings.algorithm = Algorithm::exhaustive;
    settings.top_k = 7;
    settings.constraints.memory_headroom = 0.1;
    FakeEvaluator fake;
    const SearchResult r = run_search(space, fake, settings);
    auto expected = brute_force(space, objective, settings.constraints);
    expected.resize(7);
    EXPECT_EQ(ranked_of(r), expected);
    EXPECT_EQ(fake.repeated, 0) << "a candidate was simulated twice";
  }
}

TEST(SearchAlgorithms, LowerBoundPrunesButNeverTheOptimum) {
  const Enumeration space = small_space();
  SearchSettings settings;
  settings.algorithm = Algorithm::exhaustive;
  settings.top_k = 3;
  FakeEvaluator tight(0.95), useless(0.0);
  const SearchResult pruned = run_search(space, tight, settings);
  const SearchResult full = run_search(space, useless, settings);
  EXPECT_EQ(ranked_of(pruned), ranked_of(full));
  EXPECT_GT(pruned.pruned_by_bound, 0);
  EXPECT_LT(tight.simulations, useless.simulations);
  EXPECT_EQ(useless.simulations, full.valid);  // no bound: everything that may fit is simulated
  EXPECT_DOUBLE_EQ(pruned.coverage(), 1.0);
}

TEST(SearchAlgorithms, MemoryHeadroomDropsCandidatesBeforeAndAfterSimulating) {
  const Enumeration space = small_space();
  SearchSettings settings;
  settings.algorithm = Algorithm::exhaustive;
  settings.constraints.memory_headroom = 0.5;
  FakeEvaluator fake;
  const SearchResult r = run_search(space, fake, settings);
  EXPECT_GT(r.dropped.at("exceeds memory (analytic lower bound, with headroom)"), 0);
  for (const Scored& s : r.ranked) EXPECT_LE(s.evaluation.memory_fraction, 0.5);
  EXPECT_EQ(ranked_of(r).front(), brute_force(space, Objective::time, settings.constraints).front());
}

TEST(SearchAlgorithms, GuidedFindsTheExhaustiveOptimumOnASmallSpace) {
  const Enumeration space = small_space();
  SearchSettings settings;
  settings.algorithm = Algorithm::guided;
  settings.max_evaluations = static_cast<int>(space.candidates.size()) / 3;
  FakeEvaluator fake(0.5);
  const SearchResult guided = run_search(space, fake, settings);
  EXPECT_EQ(ranked_of(guided).front(), brute_force(space, Objective::time, settings.constraints).front());
  EXPECT_LE(fake.simulations, settings.max_evaluations);
  EXPECT_EQ(fake.repeated, 0);
  EXPECT_LT(guided.coverage(), 1.0);  // it says how much it saw
  EXPECT_GT(guided.coverage(), 0.0);
}

// The automatic choice on a space above exhaustive_limit: branch and bound on the guided budget,
// exact when the bounds close the space within it, else the guided search goes on for half as
// many simulations again.
TEST(SearchAlgorithms, AutomaticIsExactWhenTheBoundsCloseALargeSpaceWithinTheBudget) {
  const Enumeration space = small_space();
  SearchSettings settings;
  settings.exhaustive_limit = 10;  // the space counts as large
  settings.max_evaluations = 60;
  FakeEvaluator exact_bounds(1.0);
  const SearchResult automatic = run_search(space, exact_bounds, settings);
  EXPECT_EQ(automatic.algorithm, Algorithm::exhaustive);
  EXPECT_LE(exact_bounds.simulations, settings.max_evaluations);
  EXPECT_EQ(automatic.coverage(), 1.0);
  settings.algorithm = Algorithm::exhaustive;
  FakeEvaluator reference(1.0);
  EXPECT_EQ(ranked_of(automatic), ranked_of(run_search(space, reference, settings)));
}

TEST(SearchAlgorithms, AutomaticGoesOnGuidedWithinTheBudgetWhenTheBoundsDoNotClose) {
  const Enumeration space = small_space();
  SearchSettings settings;
  settings.exhaustive_limit = 10;
  settings.max_evaluations = 40;
  FakeEvaluator no_bounds(0.0);
  const SearchResult automatic = run_search(space, no_bounds, settings);
  EXPECT_EQ(automatic.algorithm, Algorithm::guided);
  EXPECT_GT(no_bounds.simulations, settings.max_evaluations);  // the guided part ran
  EXPECT_LE(no_bounds.simulations, settings.max_evaluations * 3 / 2);
  EXPECT_EQ(no_bounds.repeated, 0);
  EXPECT_LT(automatic.coverage(), 1.0);
}

TEST(SearchAlgorithms, AnswerDoesNotDependOnBatchSize) {
  const Enumeration space = small_space();
  for (Algorithm algorithm : {Algorithm::exhaustive, Algorithm::guided}) {
    SCOPED_TRACE(to_string(algorithm));
    SearchSettings one, many;
    one.algorithm = many.algorithm = algorithm;
    one.batch_size = 1;
    many.batch_size = 16;
    // Guided batches are its own (fixed) make-up; the evaluator's workers never change them.
    if (algorithm == Algorithm::guided) many.batch_size = one.batch_size;
    FakeEvaluator a, b;
    EXPECT_EQ(ranked_of(run_search(space, a, one)), ranked_of(run_search(space, b, many)));
  }
}

TEST(SearchAlgorithms, TiesAreBrokenByCanonicalCandidateOrder) {
  // Every candidate equally fast: the ranking is the canonical order.
  class Flat final : public Evaluator {
   public:
    std::vector<Estimate> estimate(const std::vector<Candidate>& cs) override {
      Estimate e;
      e.valid = true;
      return std::vector<Estimate>(cs.size(), e);
    }
    std::vector<Evaluation> evaluate(const std::vector<Candidate>& cs) override {
      Evaluation e;
      e.ok = true;
      e.iteration_time_s = 1.0;
      return std::vector<Evaluation>(cs.size(), e);
    }
  } flat;
  const Enumeration space = small_space();
  SearchSettings settings;
  settings.top_k = 5;
  const SearchResult r = run_search(space, flat, settings);
  ASSERT_EQ(r.ranked.size(), 5u);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(r.ranked[i].candidate, space.candidates[i]);
}

TEST(SearchAlgorithms, ParetoFrontHoldsOnlyUndominatedCandidates) {
  const Enumeration space = small_space();
  SearchSettings settings;
  settings.algorithm = Algorithm::exhaustive;
  FakeEvaluator fake(0.0);
  const SearchResult r = run_search(space, fake, settings);
  const auto front = pareto_front(r.all, ParetoAxis::memory);
  ASSERT_GE(front.size(), 2u);
  for (const Scored& p : front)
    for (const Scored& q : r.all)
      EXPECT_FALSE(q.evaluation.iteration_time_s < p.evaluation.iteration_time_s &&
                   q.evaluation.peak_memory_bytes < p.evaluation.peak_memory_bytes)
          << q.candidate.key() << " dominates " << p.candidate.key();
}

}  // namespace
}  // namespace tandem::search
