// Branch and bound with the simulator (search.hpp, exhaustive): the search that simulates only
// what its lower bounds cannot rule out ranks the same top k as the one that simulates every
// candidate, and every bound it used lies below the simulated value.
#include <gtest/gtest.h>

#include "scenarios/search_evaluator.hpp"
#include "scenarios/search_spec.hpp"

namespace tandem {
namespace {

std::vector<std::pair<std::string, double>> ranking(const search::SearchResult& r) {
  std::vector<std::pair<std::string, double>> out;
  for (const auto& s : r.ranked) out.emplace_back(s.candidate.key(), s.value);
  return out;
}

TEST(SearchPruning, SameTopKAsSimulatingEveryCandidate) {
  for (search::Objective objective : {search::Objective::time, search::Objective::energy}) {
    SCOPED_TRACE(to_string(objective));
    const SearchScenario spec = load_search_scenario("search-tiny-h100", objective);
    const search::Enumeration space = search::enumerate(spec.space, spec.base.cluster, spec.base.training);
    search::SearchSettings pruned = spec.settings, every = spec.settings;
    pruned.algorithm = every.algorithm = search::Algorithm::exhaustive;
    every.prune = false;
    SimulationEvaluator a(spec.base, 2), b(spec.base, 2);
    const search::SearchResult fast = search::run_search(space, a, pruned);
    const search::SearchResult full = search::run_search(space, b, every);
    ASSERT_EQ(full.evaluated, full.valid) << "the reference simulates every valid candidate";
    ASSERT_EQ(full.ranked.size(), static_cast<std::size_t>(spec.settings.top_k));
    EXPECT_EQ(ranking(fast), ranking(full));
    EXPECT_LT(fast.evaluated, full.evaluated) << "the bounds ruled nothing out";
    for (const search::Scored& s : full.all)
      if (s.feasible()) EXPECT_LE(s.bound, s.value) << s.candidate.key();
  }
}

}  // namespace
}  // namespace tandem
