#include "analysis/calibration/fit.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace tandem::calibration {

namespace {

// A point whose relative residual exceeds this many times the median one, and kTrimFloor, is
// treated as disturbed and dropped by the trimming pass.
constexpr double kTrimFactor = 4.0;
constexpr double kTrimFloor = 0.05;

// Weighted least squares of t = a + b·x with weights 1/t² (relative residuals).
AffineFit solve(const std::vector<Point>& points, bool through_origin) {
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const Point& p : points) {
    const double w = 1.0 / (p.seconds * p.seconds);
    sw += w;
    sx += w * p.x;
    sy += w * p.seconds;
    sxx += w * p.x * p.x;
    sxy += w * p.x * p.seconds;
  }
  AffineFit fit;
  if (through_origin) {
    if (!(sxx > 0)) throw std::invalid_argument("fit needs a point with non-zero size");
    fit.slope_s = sxy / sxx;
  } else {
    const double det = sw * sxx - sx * sx;
    if (!(det > 1e-12 * sw * sxx)) throw std::invalid_argument("fit needs two distinct sizes");
    fit.slope_s = (sw * sxy - sx * sy) / det;
    fit.intercept_s = (sy - fit.slope_s * sx) / sw;
  }
  double sum_sq = 0;
  for (const Point& p : points) {
    const double r = (fit.at(p.x) - p.seconds) / p.seconds;
    sum_sq += r * r;
  }
  fit.points_used = static_cast<int>(points.size());
  fit.rms_relative_error = std::sqrt(sum_sq / static_cast<double>(points.size()));
  return fit;
}

std::vector<double> relative_residuals(const AffineFit& fit, const std::vector<Point>& points) {
  std::vector<double> r;
  r.reserve(points.size());
  for (const Point& p : points) r.push_back(std::abs(fit.at(p.x) - p.seconds) / p.seconds);
  return r;
}

}  // namespace

double median(std::vector<double> values) {
  if (values.empty()) throw std::invalid_argument("median of no values");
  const std::size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<long>(mid), values.end());
  const double upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  return 0.5 * (upper + *std::max_element(values.begin(), values.begin() + static_cast<long>(mid)));
}

AffineFit fit_affine(const std::vector<Point>& input, bool through_origin) {
  std::vector<Point> points;
  for (const Point& p : input) {
    if (p.seconds > 0 && std::isfinite(p.seconds) && std::isfinite(p.x)) points.push_back(p);
  }
  if (points.size() < (through_origin ? 1u : 2u)) throw std::invalid_argument("fit needs more points");
  AffineFit fit = solve(points, through_origin);
  if (points.size() < 5) return fit;  // too few to tell a disturbed point from the trend
  const std::vector<double> residuals = relative_residuals(fit, points);
  const double limit = std::max(kTrimFloor, kTrimFactor * median(residuals));
  std::vector<Point> kept;
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (residuals[i] <= limit) kept.push_back(points[i]);
  }
  if (kept.size() == points.size() || kept.size() < 3) return fit;
  try {
    return solve(kept, through_origin);
  } catch (const std::invalid_argument&) {
    return fit;  // the kept points no longer span two sizes: the untrimmed fit stands
  }
}

CurveFit fit_curve(const std::vector<Point>& points, BoundSide bound, double peak_per_s,
                   Seconds launch_overhead_s) {
  if (!(peak_per_s > 0)) throw std::invalid_argument("fit_curve needs a positive peak");
  std::vector<Point> kernel;  // the kernels' own time: measured minus the launch overhead
  for (const Point& p : points) {
    if (p.x > 0 && p.seconds - launch_overhead_s > 0) kernel.push_back({p.x, p.seconds - launch_overhead_s});
  }
  AffineFit line = fit_affine(kernel);
  if (line.intercept_s < 0 || !(line.slope_s > 0)) line = fit_affine(kernel, /*through_origin=*/true);
  if (!(line.slope_s > 0)) throw std::invalid_argument("fit_curve: time does not grow with the work");
  CurveFit fit;
  fit.curve.bound = bound;
  fit.curve.max_efficiency = 1.0 / (peak_per_s * line.slope_s);
  fit.curve.half_work = line.intercept_s / line.slope_s;
  fit.rms_relative_error = line.rms_relative_error;
  fit.points_used = line.points_used;
  return fit;
}

LinkFit fit_alpha_beta(const std::vector<Point>& points) {
  AffineFit line = fit_affine(points);
  if (line.intercept_s < 0) line = fit_affine(points, /*through_origin=*/true);
  if (!(line.slope_s > 0)) throw std::invalid_argument("fit_alpha_beta: time does not grow with size");
  return LinkFit{line.intercept_s, 1.0 / line.slope_s, line.rms_relative_error};
}

Seconds fit_launch_overhead(const std::vector<StepTiming>& steps) {
  std::vector<double> per_op;
  for (const StepTiming& s : steps) {
    if (s.ops > 0) per_op.push_back(std::max(0.0, s.step_s - s.kernels_s) / s.ops);
  }
  return per_op.empty() ? 0.0 : median(per_op);
}

}  // namespace tandem::calibration
