#include "analysis/calibration/fit.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <stdexcept>

namespace tandem::calibration {
namespace {

std::vector<double> sizes() {
  std::vector<double> x;
  for (double v = 1e3; v <= 4.1e6; v *= 2) x.push_back(v);
  return x;
}

TEST(FitAffine, IsExactOnNoiselessPoints) {
  std::vector<Point> points;
  for (double x : sizes()) points.push_back({x, 3e-6 + 2e-10 * x});
  const AffineFit fit = fit_affine(points);
  EXPECT_NEAR(fit.intercept_s, 3e-6, 1e-15);
  EXPECT_NEAR(fit.slope_s / 2e-10, 1.0, 1e-9);
  EXPECT_LT(fit.rms_relative_error, 1e-9);
}

TEST(FitAffine, NeedsTwoDistinctSizes) {
  EXPECT_THROW(fit_affine({{100, 1e-6}, {100, 2e-6}}), std::invalid_argument);
  EXPECT_THROW(fit_affine({{100, 1e-6}}), std::invalid_argument);
}

TEST(FitAlphaBeta, RecoversLatencyAndBandwidthExactlyOnNoiselessTransfers) {
  const Seconds latency_s = 5e-6;
  const BytesPerSecond bandwidth = 12e9;
  std::vector<Point> points;
  for (double bytes : sizes()) points.push_back({bytes, latency_s + bytes / bandwidth});
  const LinkFit fit = fit_alpha_beta(points);
  EXPECT_NEAR(fit.latency_s / latency_s, 1.0, 1e-9);
  EXPECT_NEAR(fit.bandwidth_bytes_per_s / bandwidth, 1.0, 1e-9);
}

// Measurements on a shared machine: every point a few percent off, and a few points slowed down
// several-fold by another program. Deterministic (seeded) noise.
std::vector<Point> noisy(const std::vector<Point>& exact, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<Point> points;
  int i = 0;
  for (const Point& p : exact) {
    const double jitter = 1.0 + 0.03 * (2.0 * (rng() / double(rng.max())) - 1.0);
    const double disturbed = (i++ % 9 == 4) ? 3.0 : 1.0;
    points.push_back({p.x, p.seconds * jitter * disturbed});
  }
  return points;
}

TEST(FitAlphaBeta, StaysWithinTwoPercentUnderJitterAndDisturbedPoints) {
  const Seconds latency_s = 5e-6;
  const BytesPerSecond bandwidth = 12e9;
  std::vector<Point> exact;
  for (int repeat = 0; repeat < 3; ++repeat)
    for (double bytes : sizes()) exact.push_back({bytes, latency_s + bytes / bandwidth});
  const LinkFit fit = fit_alpha_beta(noisy(exact, 7));
  EXPECT_NEAR(fit.latency_s / latency_s, 1.0, 0.02);
  EXPECT_NEAR(fit.bandwidth_bytes_per_s / bandwidth, 1.0, 0.02);
}

TEST(FitCurve, RecoversMaxEfficiencyAndHalfWork) {
  const EfficiencyCurve truth{BoundSide::flops, 0.8, 2.5e5};
  const double peak = 1e11;
  const Seconds launch_s = 2e-6;
  std::vector<Point> points;
  for (double flops : sizes()) points.push_back({flops, launch_s + truth.seconds(flops, peak)});
  const CurveFit fit = fit_curve(points, BoundSide::flops, peak, launch_s);
  EXPECT_NEAR(fit.curve.max_efficiency / 0.8, 1.0, 1e-9);
  EXPECT_NEAR(fit.curve.half_work / 2.5e5, 1.0, 1e-9);
  EXPECT_EQ(fit.curve.bound, BoundSide::flops);
}

TEST(FitCurve, ANegativeFixedCostIsRefittedAsNone) {
  // Pure bandwidth with the largest point a little fast: the free intercept would be negative.
  std::vector<Point> points;
  for (double bytes : sizes()) points.push_back({bytes, bytes / 1e10});
  points.back().seconds *= 0.97;
  points.front().seconds *= 1.01;
  const CurveFit fit = fit_curve(points, BoundSide::memory, 1e10, 0);
  EXPECT_GE(fit.curve.half_work, 0);
  EXPECT_NEAR(fit.curve.max_efficiency, 1.0, 0.03);
}

TEST(FitLaunchOverhead, IsTheMedianTimeOutsideKernelsPerOp) {
  const std::vector<StepTiming> steps{{1.0e-3, 0.9e-3, 100}, {2.0e-3, 1.8e-3, 100}, {5.0e-3, 3.0e-3, 100}};
  EXPECT_NEAR(fit_launch_overhead(steps), 2e-6, 1e-12);  // 1, 2 and 20 us per op
}

TEST(Median, OfOddAndEvenCounts) {
  EXPECT_EQ(median({3, 1, 2}), 2);
  EXPECT_EQ(median({4, 1, 3, 2}), 2.5);
  EXPECT_THROW(median({}), std::invalid_argument);
}

}  // namespace
}  // namespace tandem::calibration
