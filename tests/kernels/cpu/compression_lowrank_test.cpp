// PowerSGD's kernels: Gram-Schmidt leaves orthonormal columns spanning the same leading
// subspaces as the input's, keeps a zero column zero; the seeded Gaussian is the same for a
// seed, different across seeds, and standard normal in its moments.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/cpu/compression_lowrank.hpp"
#include "tests/kernels/cpu/kernel_test_support.hpp"

namespace tandem::kernels::cpu {
namespace {

double column_dot(const std::vector<float>& p, int rows, int cols, int a, int b) {
  double s = 0;
  for (int r = 0; r < rows; ++r) s += static_cast<double>(p[r * cols + a]) * p[r * cols + b];
  return s;
}

TEST(CompressionLowRank, OrthogonalizedColumnsAreOrthonormal) {
  const int rows = 50, cols = 4;
  auto p = testing::random_vector(rows * cols, 11);
  const auto original = p;
  orthogonalize_columns(p.data(), rows, cols);
  for (int a = 0; a < cols; ++a)
    for (int b = 0; b < cols; ++b) EXPECT_NEAR(column_dot(p, rows, cols, a, b), a == b ? 1.0 : 0.0, 1e-5) << a << b;
  // The first column keeps its direction (Gram-Schmidt spans the same leading subspaces).
  const double norm0 = std::sqrt(column_dot(original, rows, cols, 0, 0));
  for (int r = 0; r < rows; ++r) EXPECT_NEAR(p[r * cols], original[r * cols] / norm0, 1e-5);
}

TEST(CompressionLowRank, AZeroColumnStaysZero) {
  std::vector<float> p{1, 0, 2, 0, 3, 0};  // [3, 2], second column zero
  orthogonalize_columns(p.data(), 3, 2);
  for (int r = 0; r < 3; ++r) EXPECT_EQ(p[r * 2 + 1], 0.0f);
}

TEST(CompressionLowRank, GaussianIsAPureFunctionOfTheSeedWithStandardMoments) {
  const int n = 20001;  // odd: the last pair is cut
  std::vector<float> a(n), b(n), c(n);
  gaussian_fill(a.data(), n, 42);
  gaussian_fill(b.data(), n, 42);
  gaussian_fill(c.data(), n, 43);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  double mean = 0, var = 0;
  for (float v : a) mean += v;
  mean /= n;
  for (float v : a) var += (v - mean) * (v - mean);
  var /= n;
  // Standard errors of the sample mean and variance at n = 20001: 0.007 and 0.01.
  EXPECT_NEAR(mean, 0.0, 0.04);
  EXPECT_NEAR(var, 1.0, 0.05);
}

}  // namespace
}  // namespace tandem::kernels::cpu
