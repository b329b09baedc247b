// The fitting half of calibration: pure math on measured (size, seconds) points, no backend.
// Every fit is deterministic (same points, same result) and exact on exact data.
//
//   fit_affine        t = a + b·x by least squares on RELATIVE residuals ((a + b·x − t) / t):
//                     measurements span decades of sizes and their noise is proportional to the
//                     time, so an absolute fit would let the largest points decide alone. One
//                     trimming pass then drops points far off the line (a measurement that another
//                     process on the machine slowed down) and refits.
//   fit_curve         an efficiency curve (platforms/efficiency_curve.hpp) from an op kind's
//                     points: time − launch overhead = (x + half_work) / (peak · max_efficiency)
//                     is affine in the work x, so max_efficiency = 1 / (peak · b) and
//                     half_work = a / b. A negative intercept (noise around a zero fixed cost) is
//                     refitted through the origin (half_work = 0).
//   fit_alpha_beta    a link's latency and bandwidth (the alpha-beta model t = α + bytes / β)
//                     from point-to-point transfers of several sizes.
//   fit_launch_overhead  the per-op cost a backend adds around its kernels: of whole steps, the
//                     time not spent inside kernels, per op (median over steps).
#pragma once

#include <vector>

#include "common/units.hpp"
#include "platforms/efficiency_curve.hpp"

namespace tandem::calibration {

struct Point {
  double x = 0;       // work: FLOPs, bytes
  Seconds seconds = 0;
};

struct AffineFit {
  double intercept_s = 0;
  double slope_s = 0;               // seconds per unit of x
  double rms_relative_error = 0;    // over the points kept
  int points_used = 0;
  Seconds at(double x) const { return intercept_s + slope_s * x; }
};

// Needs two points with distinct x (std::invalid_argument otherwise). `through_origin` fixes a = 0.
AffineFit fit_affine(const std::vector<Point>& points, bool through_origin = false);

struct CurveFit {
  EfficiencyCurve curve;
  double rms_relative_error = 0;
  int points_used = 0;
};

// `points`: (work on the bound side, measured seconds including the launch overhead).
CurveFit fit_curve(const std::vector<Point>& points, BoundSide bound, double peak_per_s,
                   Seconds launch_overhead_s);

struct LinkFit {
  Seconds latency_s = 0;
  BytesPerSecond bandwidth_bytes_per_s = 0;
  double rms_relative_error = 0;
};
// `points`: (bytes, seconds). Latency is clamped at 0.
LinkFit fit_alpha_beta(const std::vector<Point>& points);

struct StepTiming {
  Seconds step_s = 0;         // a whole step, wall clock
  Seconds kernels_s = 0;      // the sum of its ops' kernel times
  int ops = 0;
};
Seconds fit_launch_overhead(const std::vector<StepTiming>& steps);

double median(std::vector<double> values);  // of a non-empty list (std::invalid_argument)

}  // namespace tandem::calibration
