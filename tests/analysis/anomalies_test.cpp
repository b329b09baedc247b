// Stragglers and slow ops found in a trace: a rank computing 30% slower than its 7 peers is
// named, a jitter of a few percent is not; an op 3x slower on one rank is named; ranks of another
// device or stage are not peers (A100 ranks are not stragglers of H100 ones); fewer than 3
// peers cannot tell who is slow.
#include "analysis/anomalies.hpp"

#include <gtest/gtest.h>

#include "tests/analysis/trace_builders.hpp"

namespace tandem {
namespace {

using analysis_test::gemm;

// `ranks` ranks, 3 iterations of 4 GEMMs each; `scale(rank, op)` stretches an op.
template <typename Scale>
Trace trace_of(int ranks, Scale scale, std::vector<TraceRank> where = {}) {
  std::vector<TraceRecord> records;
  for (int it = 0; it < 3; ++it)
    for (int r = 0; r < ranks; ++r) {
      double t = it * 1.0;
      for (int op = 0; op < 4; ++op) {
        const double length = 1e-3 * (1 + 0.01 * ((r * 7 + op * 3 + it) % 5)) * scale(r, op);  // <= 4% jitter
        records.push_back(gemm(r, it, "gemm" + std::to_string(op), t, t + length));
        t += length;
      }
    }
  Trace trace = analysis_test::trace_of("cpu", std::move(records));
  trace.ranks = std::move(where);
  return trace;
}

TEST(Anomalies, NamesTheRankThatComputesSlowerThanItsPeers) {
  const Anomalies a = find_anomalies(trace_of(8, [](int r, int) { return r == 5 ? 1.3 : 1.0; }));
  EXPECT_EQ(a.ranks_checked, 8);
  ASSERT_EQ(a.ranks.size(), 1u);
  EXPECT_EQ(a.ranks[0].rank, 5);
  EXPECT_NEAR(a.ranks[0].slower(), 0.3, 0.05);
  EXPECT_NE(to_text(a).find("straggler: rank 5"), std::string::npos) << to_text(a);
}

TEST(Anomalies, JitterIsNotAStraggler) {
  const Anomalies a = find_anomalies(trace_of(8, [](int, int) { return 1.0; }));
  EXPECT_TRUE(a.ranks.empty());
  EXPECT_TRUE(a.ops.empty());
  EXPECT_NE(to_text(a).find("no straggler"), std::string::npos);
}

TEST(Anomalies, NamesAnOpSlowOnOneRank) {
  const Anomalies a = find_anomalies(trace_of(6, [](int r, int op) { return r == 2 && op == 1 ? 3.0 : 1.0; }));
  ASSERT_FALSE(a.ops.empty());
  EXPECT_EQ(a.ops[0].rank, 2);
  EXPECT_EQ(a.ops[0].op_id, "gemm1");
  EXPECT_NEAR(a.ops[0].slower(), 2.0, 0.1);
  EXPECT_EQ(nlohmann::json(to_json(a))["slow_ops"][0]["op"], "gemm1");
}

TEST(Anomalies, PeersShareADeviceAndStage) {
  std::vector<TraceRank> where;
  for (int r = 0; r < 8; ++r) where.push_back({r < 5 ? "H100-SXM" : "A100-SXM-80GB", r < 5 ? "h100" : "a100", r / 4});
  // The 3 A100 ranks compute 1.6x as long: peers of each other, not stragglers.
  const auto a100_slower = [](int r, int) { return r < 5 ? 1.0 : 1.6; };
  const Anomalies a = find_anomalies(trace_of(8, a100_slower, where));
  EXPECT_EQ(a.ranks_checked, 8);
  EXPECT_TRUE(a.ranks.empty());
  // Without the ranks' places all 8 would be peers, and the A100 ranks stragglers.
  EXPECT_EQ(find_anomalies(trace_of(8, a100_slower)).ranks.size(), 3u);
}

TEST(Anomalies, TwoRanksCannotTellWhoIsSlow) {
  const Anomalies a = find_anomalies(trace_of(2, [](int r, int) { return r == 1 ? 2.0 : 1.0; }));
  EXPECT_EQ(a.ranks_checked, 0);
  EXPECT_TRUE(a.ranks.empty());
  EXPECT_NE(to_text(a).find("no peer group"), std::string::npos);
}

}  // namespace
}  // namespace tandem
