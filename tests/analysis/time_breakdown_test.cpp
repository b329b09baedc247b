#include "analysis/time_breakdown.hpp"

#include <gtest/gtest.h>

#include "tests/analysis/trace_builders.hpp"

namespace tandem {
namespace {

using analysis_test::all_reduce;
using analysis_test::gemm;

TEST(TimeBreakdown, CommunicationHiddenByComputeIsNotExposedAndIdleFillsTheIteration) {
  // Rank 0 computes [0,2] and [2.5,3], communicates [1,4]: exposed [2,2.5] and [3,4] = 1.5 s.
  // Rank 1 computes [0,5]: the iteration lasts 5 s, so rank 0 idles 5 - 2.5 - 1.5 = 1 s.
  const auto b = time_breakdown({gemm(0, 0, "a", 0, 2), gemm(0, 0, "b", 2.5, 3), all_reduce(0, 0, "ar", 1, 4),
                                 gemm(1, 0, "c", 0, 5)});
  EXPECT_DOUBLE_EQ(b.at(0).compute_s, 2.5);
  EXPECT_DOUBLE_EQ(b.at(0).comm_busy_s, 3);
  EXPECT_DOUBLE_EQ(b.at(0).exposed_comm_s, 1.5);
  EXPECT_DOUBLE_EQ(b.at(0).idle_s, 1);
  EXPECT_DOUBLE_EQ(b.at(1).compute_s, 5);
  EXPECT_DOUBLE_EQ(b.at(1).idle_s, 0);
}

TEST(TimeBreakdown, OverlappingComputeOpsAreCountedOnce) {
  const auto b = time_breakdown({gemm(0, 0, "a", 0, 2), gemm(0, 0, "b", 1, 3)});
  EXPECT_DOUBLE_EQ(b.at(0).compute_s, 3);
  EXPECT_DOUBLE_EQ(b.at(0).idle_s, 0);
}

}  // namespace
}  // namespace tandem
