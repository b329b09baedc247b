#include "kernels/cpu/gemm.hpp"

#include <gtest/gtest.h>

#include "tests/kernels/cpu/kernel_test_support.hpp"

namespace tandem::kernels::cpu {
namespace {

using namespace testing;
using I64 = std::int64_t;

// The reference: a naive triple loop in double over the stored (possibly transposed) operands.
std::vector<double> naive_gemm(const std::vector<float>& a, const std::vector<float>& b,
                               const std::vector<float>& c0, I64 m, I64 n, I64 k, bool ta,
                               bool tb, bool acc, I64 batch) {
  std::vector<double> c(static_cast<std::size_t>(batch * m * n));
  for (I64 p = 0; p < batch; ++p)
    for (I64 i = 0; i < m; ++i)
      for (I64 j = 0; j < n; ++j) {
        double s = acc ? c0[p * m * n + i * n + j] : 0.0;
        for (I64 l = 0; l < k; ++l) {
          const double av = ta ? a[p * m * k + l * m + i] : a[p * m * k + i * k + l];
          const double bv = tb ? b[p * k * n + j * k + l] : b[p * k * n + l * n + j];
          s += av * bv;
        }
        c[p * m * n + i * n + j] = s;
      }
  return c;
}

struct Case {
  I64 m, n, k;
  bool ta, tb, acc;
  I64 batch;
};

class GemmForward : public ::testing::TestWithParam<Case> {};

TEST_P(GemmForward, MatchesNaiveTripleLoop) {
  const Case t = GetParam();
  auto a = random_vector(t.batch * t.m * t.k, 1);
  auto b = random_vector(t.batch * t.k * t.n, 2);
  auto c = random_vector(t.batch * t.m * t.n, 3);
  const auto want = naive_gemm(a, b, c, t.m, t.n, t.k, t.ta, t.tb, t.acc, t.batch);
  gemm_forward(c.data(), a.data(), b.data(), t.m, t.n, t.k, t.ta, t.tb, t.acc, t.batch);
  EXPECT_LT(rel_error(c, want), 1e-5);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, GemmForward,
    ::testing::Values(Case{5, 7, 4, false, false, false, 1}, Case{5, 7, 4, true, false, false, 1},
                      Case{5, 7, 4, false, true, false, 1}, Case{5, 7, 4, true, true, false, 1},
                      Case{5, 7, 4, false, false, true, 1}, Case{5, 7, 4, true, false, true, 1},
                      Case{5, 7, 4, false, true, true, 3}, Case{5, 7, 4, true, true, true, 3},
                      // big enough for BLAS's blocked/packed paths
                      Case{67, 45, 133, false, false, false, 1},
                      Case{67, 45, 133, true, true, true, 2},
                      Case{1, 300, 64, false, true, false, 1}));

TEST(GemmTest, EmptyInnerDimensionWritesZerosOrKeeps) {
  std::vector<float> c(6, 5.0f), a(1), b(1);
  gemm_forward(c.data(), a.data(), b.data(), 2, 3, 0, false, false, /*accumulate=*/true);
  EXPECT_EQ(c[4], 5.0f);
  gemm_forward(c.data(), a.data(), b.data(), 2, 3, 0, false, false, /*accumulate=*/false);
  EXPECT_EQ(c[4], 0.0f);
}

TEST(GemmTest, BlasThreadCountCanBeSet) {
  const int before = blas_threads();
  EXPECT_GE(before, 1);
  set_blas_threads(1);
  EXPECT_EQ(blas_threads(), 1);
  set_blas_threads(before);
}

TEST(GemmTest, BetaZeroIgnoresGarbageInC) {
  std::vector<float> a{1, 2}, b{3, 4};
  std::vector<float> c{std::nanf("")};
  gemm_forward(c.data(), a.data(), b.data(), 1, 1, 2, false, false, false);
  EXPECT_FLOAT_EQ(c[0], 11.0f);
}

class GemmBackward : public ::testing::TestWithParam<Case> {};

// L = Σ W∘C with C = op(A)·op(B): dC = W; dA, dB from gemm_backward vs central differences.
TEST_P(GemmBackward, MatchesFiniteDifferences) {
  const Case t = GetParam();
  auto a = random_vector(t.batch * t.m * t.k, 4);
  auto b = random_vector(t.batch * t.k * t.n, 5);
  const auto w = random_vector(t.batch * t.m * t.n, 6);
  std::vector<float> c(w.size());
  auto loss = [&] {
    gemm_forward(c.data(), a.data(), b.data(), t.m, t.n, t.k, t.ta, t.tb, false, t.batch);
    return weighted_sum(w, c.data());
  };
  std::vector<float> da(a.size(), 0.0f), db(b.size(), 0.0f);
  gemm_backward(da.data(), db.data(), w.data(), a.data(), b.data(), t.m, t.n, t.k, t.ta, t.tb,
                t.batch);
  expect_fd("gemm_da", da, fd_gradient(a, loss));
  expect_fd("gemm_db", db, fd_gradient(b, loss));
  // gemm_backward accumulates.
  std::vector<float> da2 = da;
  gemm_backward(da2.data(), nullptr, w.data(), a.data(), b.data(), t.m, t.n, t.k, t.ta, t.tb,
                t.batch);
  for (std::size_t i = 0; i < da.size(); ++i) EXPECT_FLOAT_EQ(da2[i], 2 * da[i]);
}

INSTANTIATE_TEST_SUITE_P(Shapes, GemmBackward,
                         ::testing::Values(Case{4, 3, 5, false, false, false, 1},
                                           Case{4, 3, 5, true, false, false, 1},
                                           Case{4, 3, 5, false, true, false, 1},
                                           Case{4, 3, 5, true, true, false, 2}));

}  // namespace
}  // namespace tandem::kernels::cpu
