// What the search expects still to simulate (SearchProgress::expected_size, the progress' time
// left): with exact bounds it predicts the simulations that follow to within one batch, and it
// never exceeds the most that could follow.
#include <gtest/gtest.h>

#include "platforms/cluster.hpp"
#include "tests/strategies/search/fake_evaluator.hpp"
#include "tests/strategies/search/small_space.hpp"

namespace tandem::search {
namespace {

TEST(SearchEta, ExpectedSimulationsFollowTheBounds) {
  const Enumeration e = test::small_space();
  SearchSettings settings;
  settings.algorithm = Algorithm::exhaustive;
  settings.top_k = 3;
  settings.batch_size = 4;
  for (double fraction : {1.0, 0.9}) {
    SCOPED_TRACE(fraction);
    test::FakeEvaluator fake(fraction);
    std::vector<SearchProgress> reports;
    const SearchResult r = run_search(e, fake, settings, [&](const SearchProgress& p) { reports.push_back(p); });
    ASSERT_FALSE(reports.empty());
    for (const SearchProgress& p : reports) {
      EXPECT_LE(p.expected_size, p.remaining_size);
      EXPECT_DOUBLE_EQ(p.done_size, static_cast<double>(p.evaluated)) << "unit sizes";
    }
    const double predicted = reports.front().expected_size;
    const double followed = static_cast<double>(r.evaluated - reports.front().evaluated);
    if (fraction == 1.0) {
      EXPECT_GE(followed, predicted);
      EXPECT_LE(followed, predicted + settings.batch_size);
    }
  }
}

}  // namespace
}  // namespace tandem::search
