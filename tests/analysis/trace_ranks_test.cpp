// Which ranks a trace keeps (`--trace-ranks`), and where each rank ran.
#include "analysis/trace_ranks.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

#include "tests/analysis/trace_builders.hpp"

namespace tandem {
namespace {

TEST(TraceRanks, AListOfRanksAndRangesIsAMaskByRank) {
  const std::vector<bool> keep = parse_rank_list("0-2,5,7-7", 8);
  EXPECT_EQ(keep, (std::vector<bool>{true, true, true, false, false, true, false, true}));
}

TEST(TraceRanks, RanksOutsideTheJobOrMalformedItemsAreRefused) {
  for (const char* bad : {"", "8", "-1", "3-1", "a", "1,,2", "1-", "0-8", "1 ,2"})
    EXPECT_THROW(parse_rank_list(bad, 8), std::invalid_argument) << "'" << bad << "'";
}

TEST(TraceRanks, KeepingRanksDropsTheOthersRecordsOnly) {
  using analysis_test::gemm;
  Trace trace = analysis_test::trace_of("sim", {gemm(0, 0, "a", 0, 1), gemm(1, 0, "a", 0, 1), gemm(2, 0, "a", 0, 1)});
  keep_ranks(trace, parse_rank_list("0,2", 3));
  ASSERT_EQ(trace.records.size(), 2u);
  EXPECT_EQ(trace.records[0].rank, 0);
  EXPECT_EQ(trace.records[1].rank, 2);
}

TEST(TraceRanks, EachRankIsPlacedOnItsDeviceGroupAndNode) {
  const std::vector<TraceRank> ranks = trace_ranks(find_cluster("mixed-h100-a100-64"), 64);
  ASSERT_EQ(ranks.size(), 64u);
  EXPECT_EQ(ranks[0].device, "H100-SXM");
  EXPECT_EQ(ranks[9].node, 1);
  EXPECT_EQ(ranks[40].device, "A100-SXM-80GB");
  EXPECT_EQ(ranks[40].group, "a100");
  EXPECT_EQ(ranks[40].node, 5);
}

}  // namespace
}  // namespace tandem
