#include "kernels/cpu/norm.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "tests/kernels/cpu/kernel_test_support.hpp"

namespace tandem::kernels::cpu {
namespace {

using namespace testing;
using I64 = std::int64_t;

TEST(NormTest, LayerNormGivesZeroMeanUnitVariance) {
  const I64 rows = 6, cols = 256;
  const auto x = random_vector(rows * cols, 21, -3.0f, 5.0f);  // off-centre on purpose
  std::vector<float> w(cols, 1.0f), y(x.size()), mean(rows), rstd(rows);
  layernorm_forward(y.data(), mean.data(), rstd.data(), x.data(), w.data(), nullptr, rows, cols);
  for (I64 r = 0; r < rows; ++r) {
    double m = 0.0, v = 0.0;
    for (I64 c = 0; c < cols; ++c) m += y[r * cols + c];
    m /= cols;
    for (I64 c = 0; c < cols; ++c) v += (y[r * cols + c] - m) * (y[r * cols + c] - m);
    v /= cols;
    EXPECT_NEAR(m, 0.0, 1e-6);
    EXPECT_NEAR(v, 1.0, 1e-4);  // var/(var + eps) with var ≈ 5.3: 1 − 2e-6
    EXPECT_NEAR(mean[r], 1.0, 0.5);
  }
}

TEST(NormTest, RmsNormGivesUnitRms) {
  const I64 rows = 4, cols = 128;
  const auto x = random_vector(rows * cols, 22, -2.0f, 3.0f);
  std::vector<float> w(cols, 1.0f), y(x.size());
  rmsnorm_forward(y.data(), nullptr, x.data(), w.data(), nullptr, rows, cols);
  for (I64 r = 0; r < rows; ++r) {
    double sq = 0.0;
    for (I64 c = 0; c < cols; ++c) sq += y[r * cols + c] * y[r * cols + c];
    EXPECT_NEAR(std::sqrt(sq / cols), 1.0, 1e-4);
  }
}

TEST(NormTest, ForwardMatchesNaiveWithAffine) {
  const I64 rows = 3, cols = 17;
  const auto x = random_vector(rows * cols, 23);
  const auto w = random_vector(cols, 24), b = random_vector(cols, 25);
  std::vector<float> y(x.size()), yr(x.size());
  layernorm_forward(y.data(), nullptr, nullptr, x.data(), w.data(), b.data(), rows, cols);
  rmsnorm_forward(yr.data(), nullptr, x.data(), w.data(), nullptr, rows, cols);
  std::vector<double> want(x.size()), want_r(x.size());
  for (I64 r = 0; r < rows; ++r) {
    double m = 0, v = 0, sq = 0;
    for (I64 c = 0; c < cols; ++c) m += x[r * cols + c];
    m /= cols;
    for (I64 c = 0; c < cols; ++c) {
      v += (x[r * cols + c] - m) * (x[r * cols + c] - m);
      sq += static_cast<double>(x[r * cols + c]) * x[r * cols + c];
    }
    v /= cols;
    for (I64 c = 0; c < cols; ++c) {
      want[r * cols + c] = (x[r * cols + c] - m) / std::sqrt(v + 1e-5) * w[c] + b[c];
      want_r[r * cols + c] = x[r * cols + c] / std::sqrt(sq / cols + 1e-5) * w[c];
    }
  }
  EXPECT_LT(rel_error(y, want), 1e-5);
  EXPECT_LT(rel_error(yr, want_r), 1e-5);
}

struct NormCase {
  bool layer;
  bool bias;
};

class NormBackward : public ::testing::TestWithParam<NormCase> {};

// L = Σ W∘y; dx, dweight, dbias vs central differences. dweight/dbias accumulate onto what is
// there, dx is overwritten.
TEST_P(NormBackward, MatchesFiniteDifferences) {
  const auto [layer, with_bias] = GetParam();
  const I64 rows = 4, cols = 9;
  auto x = random_vector(rows * cols, 26, -2.0f, 2.0f);
  auto w = random_vector(cols, 27, 0.5f, 1.5f);
  auto b = random_vector(cols, 28);
  const auto dy = random_vector(rows * cols, 29);
  std::vector<float> y(x.size());
  auto loss = [&] {
    const float* bias = with_bias ? b.data() : nullptr;
    if (layer) layernorm_forward(y.data(), nullptr, nullptr, x.data(), w.data(), bias, rows, cols);
    else rmsnorm_forward(y.data(), nullptr, x.data(), w.data(), bias, rows, cols);
    return weighted_sum(dy, y.data());
  };
  std::vector<float> dx(x.size(), 42.0f), dw(cols, 1.0f), db(cols, 1.0f);
  float* dbp = with_bias ? db.data() : nullptr;
  if (layer) layernorm_backward(dx.data(), dw.data(), dbp, dy.data(), x.data(), w.data(), rows, cols);
  else rmsnorm_backward(dx.data(), dw.data(), dbp, dy.data(), x.data(), w.data(), rows, cols);
  for (auto& v : dw) v -= 1.0f;  // remove the pre-existing 1 that was accumulated onto
  for (auto& v : db) v -= 1.0f;
  expect_fd("norm_dx", dx, fd_gradient(x, loss));
  expect_fd("norm_dw", dw, fd_gradient(w, loss));
  if (with_bias) {
    expect_fd("norm_db", db, fd_gradient(b, loss));
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, NormBackward,
                         ::testing::Values(NormCase{true, true}, NormCase{true, false},
                                           NormCase{false, false}, NormCase{false, true}));

}  // namespace
}  // namespace tandem::kernels::cpu
