// Ring collectives on a star against the alpha-beta formulas, which hold exactly on a star
// with neutral network factors: all-reduce 2(n−1)(α + S/(nβ)); reduce-scatter and all-gather
// (n−1)(α + S/(nβ)), α being the host-to-host route latency (two links).
#include <gtest/gtest.h>

#include <cstdio>

#include "tests/sim/collectives/collective_harness.hpp"

namespace tandem::sim_test::collectives {
namespace {

constexpr BytesPerSecond kBandwidth = 25e9;
constexpr Seconds kLinkLatency = 2.5e-6;

struct Case {
  int n;
  Bytes bytes;
};

double formula(OpKind kind, int n, Bytes S) {
  const double alpha = 2 * kLinkLatency;
  const double steps = kind == OpKind::all_reduce ? 2.0 * (n - 1) : (n - 1);
  return steps * (alpha + S / n / kBandwidth);
}

void expect_formula(OpKind kind, CollectiveFidelity fidelity, const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    Job job;
    job.kind = kind;
    job.bytes = c.bytes;
    job.ranks = iota_ranks(c.n);
    job.algorithm = CollectiveAlgorithm::ring;
    job.fidelity = fidelity;
    const Outcome out = simulate_one(PlatformSpec::star(c.n, kBandwidth, kLinkLatency), job);
    ASSERT_TRUE(out.ok) << out.error;
    const double expected = formula(kind, c.n, c.bytes);
    const double err = relative_error(out.duration(), expected);
    std::printf("  %-14s %-10s n=%-4d S=%-12.0f sim=%.6e formula=%.6e err=%.2e\n", to_string(kind),
                sim::to_string(fidelity), c.n, c.bytes, out.duration(), expected, err);
    EXPECT_LT(err, 0.02) << to_string(kind) << " n=" << c.n << " S=" << c.bytes;
  }
}

const std::vector<Case> kCases = {{2, 1e6}, {8, 1024}, {8, 64e6}, {16, 4e6}, {32, 256e6}, {33, 1e5}};

TEST(RingCollective, AllReduceMatchesFormulaExact) {
  expect_formula(OpKind::all_reduce, CollectiveFidelity::exact, kCases);
}
TEST(RingCollective, AllReduceMatchesFormulaAggregated) {
  expect_formula(OpKind::all_reduce, CollectiveFidelity::aggregated, kCases);
}
TEST(RingCollective, ReduceScatterMatchesFormula) {
  expect_formula(OpKind::reduce_scatter, CollectiveFidelity::exact, kCases);
  expect_formula(OpKind::reduce_scatter, CollectiveFidelity::aggregated, kCases);
}
TEST(RingCollective, AllGatherMatchesFormula) {
  expect_formula(OpKind::all_gather, CollectiveFidelity::exact, kCases);
  expect_formula(OpKind::all_gather, CollectiveFidelity::aggregated, kCases);
}

}  // namespace
}  // namespace tandem::sim_test::collectives
