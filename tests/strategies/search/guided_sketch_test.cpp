// Guided search over a sketched space (search.hpp, step 1: large spaces are sketched, each
// candidate estimated in full only when proposed): a proposed candidate that the full estimate
// drops (it cannot fit) is never proposed again, so the search ends within its budget instead of
// proposing the same dropped neighbours forever.
#include <gtest/gtest.h>

#include <stdexcept>

#include "tests/strategies/search/fake_evaluator.hpp"
#include "tests/strategies/search/small_space.hpp"

namespace tandem::search {
namespace {

// The fake evaluator behind sketches that know no memory: every candidate looks as if it fits
// until estimated in full. Estimating one candidate in full twice means the search went round in
// circles: it throws rather than loop.
class SketchingEvaluator final : public Evaluator {
 public:
  std::vector<Estimate> sketch(const std::vector<Candidate>& candidates) override {
    std::vector<Estimate> out = inner.estimate(candidates);
    for (Estimate& e : out) {
      e.sketched = true;
      e.memory_fraction = 0;
    }
    return out;
  }
  std::vector<Estimate> estimate(const std::vector<Candidate>& candidates) override {
    for (const Candidate& c : candidates)
      if (!estimated.insert(c).second) throw std::runtime_error("estimated twice: " + c.key());
    return inner.estimate(candidates);
  }
  std::vector<Evaluation> evaluate(const std::vector<Candidate>& candidates) override {
    return inner.evaluate(candidates);
  }

  test::FakeEvaluator inner{0.5};
  std::set<Candidate> estimated;
};

TEST(GuidedSketch, CandidatesDroppedByTheirFullEstimateAreNotProposedAgain) {
  const Enumeration all = test::small_space();
  SearchSettings settings;
  settings.algorithm = Algorithm::guided;
  settings.estimate_limit = 0;  // sketch everything
  settings.constraints.memory_headroom = 0.5;  // many candidates turn out too large when estimated in full
  settings.max_evaluations = static_cast<int>(all.candidates.size()) / 3;
  SketchingEvaluator evaluator;
  const SearchResult r = run_search(all, evaluator, settings);
  ASSERT_FALSE(r.ranked.empty());
  EXPECT_GT(r.dropped.at("exceeds memory (analytic lower bound, with headroom)"), 0);
  for (const Scored& s : r.ranked) EXPECT_LE(s.evaluation.memory_fraction, 0.5);
  EXPECT_LE(evaluator.inner.simulations, settings.max_evaluations);
  EXPECT_EQ(evaluator.inner.repeated, 0);
}

}  // namespace
}  // namespace tandem::search
