// Helpers shared by the CPU kernel tests: seeded random data, central finite differences and a
// norm-wise relative error.
//
// Finite differences: the kernels are fp32, so the scalar probed is L = Σ w·out accumulated in
// double over the float outputs, and the step is the float difference actually realised
// (x ± h rounded to float). With h = 1e-2 and O(1) data the rounding term is ~1e-6 relative and
// the truncation term h²·f'''/6 ~ 1e-5, so a gradient error below kFdTolerance = 1e-3 (max
// absolute error over the max |FD gradient|) means the backward is right.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace tandem::kernels::cpu::testing {

inline constexpr double kFdTolerance = 1e-3;
inline constexpr float kFdStep = 1e-2f;

inline std::vector<float> random_vector(std::size_t n, std::uint32_t seed, float lo = -1.0f,
                                        float hi = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(gen);
  return v;
}

inline double weighted_sum(const std::vector<float>& w, const float* out) {
  double s = 0.0;
  for (std::size_t i = 0; i < w.size(); ++i) s += static_cast<double>(w[i]) * out[i];
  return s;
}

// dL/dx[i] for every i by central differences; `loss` reads x.
inline std::vector<double> fd_gradient(std::vector<float>& x, const std::function<double()>& loss,
                                       float h = kFdStep) {
  std::vector<double> g(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const float x0 = x[i];
    const float xp = x0 + h, xm = x0 - h;
    x[i] = xp;
    const double lp = loss();
    x[i] = xm;
    const double lm = loss();
    x[i] = x0;
    g[i] = (lp - lm) / (static_cast<double>(xp) - static_cast<double>(xm));
  }
  return g;
}

// max |a − b| / max |b| (b the reference); 0 when both are 0.
template <typename A, typename B>
double rel_error(const std::vector<A>& a, const std::vector<B>& b) {
  double num = 0.0, den = 0.0;
  for (std::size_t i = 0; i < b.size(); ++i) {
    num = std::max(num, std::abs(static_cast<double>(a[i]) - static_cast<double>(b[i])));
    den = std::max(den, std::abs(static_cast<double>(b[i])));
  }
  return den == 0.0 ? num : num / den;
}

// Asserts a backward against finite differences and records the error as a test property
// ("fd_<what>" in --gtest_output=xml).
template <typename A>
void expect_fd(const std::string& what, const std::vector<A>& analytic,
               const std::vector<double>& fd) {
  const double err = rel_error(analytic, fd);
  ::testing::Test::RecordProperty("fd_" + what, std::to_string(err));
  EXPECT_LT(err, kFdTolerance) << what;
}

}  // namespace tandem::kernels::cpu::testing
