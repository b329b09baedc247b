// The views of a trace that keep some iterations (the median one, the mean one, those from one on)
// keep what the trace says of its ranks (device, node group, node), which the report
// groups ranks by.
#include "analysis/iteration_view.hpp"

#include <gtest/gtest.h>

#include "tests/analysis/trace_builders.hpp"

namespace tandem {
namespace {

using analysis_test::gemm;
using analysis_test::trace_of;

Trace three_iterations_on_two_devices() {
  std::vector<TraceRecord> records;
  for (int it = 0; it < 3; ++it)
    for (int rank = 0; rank < 2; ++rank) records.push_back(gemm(rank, it, "fc1", it * 1.0, it * 1.0 + 0.5 + 0.1 * it));
  Trace t = trace_of("sim", std::move(records));
  t.ranks = {TraceRank{"H100-SXM", "h100", 0}, TraceRank{"A100-SXM-80GB", "a100", 1}};
  return t;
}

TEST(IterationView, EveryViewOfSomeIterationsKeepsTheRanksDevicesGroupsAndNodes) {
  const Trace t = three_iterations_on_two_devices();
  for (const Trace& view : {median_iteration(t), fold_to_mean_iteration(t), drop_iterations_before(t, 1)}) {
    ASSERT_EQ(view.ranks.size(), 2u);
    EXPECT_EQ(view.ranks[1].device, "A100-SXM-80GB");
    EXPECT_EQ(view.ranks[1].group, "a100");
    EXPECT_EQ(view.ranks[1].node, 1);
  }
}

}  // namespace
}  // namespace tandem
