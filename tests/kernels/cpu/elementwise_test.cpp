#include "kernels/cpu/elementwise.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "tests/kernels/cpu/kernel_test_support.hpp"

namespace tandem::kernels::cpu {
namespace {

using namespace testing;
using I64 = std::int64_t;

TEST(ElementwiseTest, GeluMatchesTanhFormula) {
  const auto x = random_vector(1000, 31, -6.0f, 6.0f);
  std::vector<float> y(x.size());
  gelu_forward(y.data(), x.data(), static_cast<I64>(x.size()));
  std::vector<double> want(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double v = x[i];
    want[i] = 0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v)));
  }
  EXPECT_LT(rel_error(y, want), 1e-6);
  // Far tails: identity and zero, no NaN from overflow.
  std::vector<float> big{100.0f, -100.0f}, yb(2), db(2);
  const std::vector<float> ones{1.0f, 1.0f};
  gelu_forward(yb.data(), big.data(), 2);
  gelu_backward(db.data(), big.data(), ones.data(), 2);
  EXPECT_FLOAT_EQ(yb[0], 100.0f);
  EXPECT_FLOAT_EQ(yb[1], 0.0f);
  EXPECT_FLOAT_EQ(db[0], 1.0f);
  EXPECT_FLOAT_EQ(db[1], 0.0f);
}

TEST(ElementwiseTest, GeluBackwardMatchesFiniteDifferences) {
  auto x = random_vector(200, 32, -4.0f, 4.0f);
  const auto w = random_vector(x.size(), 33);
  const I64 n = static_cast<I64>(x.size());
  std::vector<float> y(x.size()), dx(x.size());
  gelu_backward(dx.data(), x.data(), w.data(), n);
  const auto fd = fd_gradient(x, [&] {
    gelu_forward(y.data(), x.data(), n);
    return weighted_sum(w, y.data());
  });
  expect_fd("elementwise_dx", dx, fd);
}

TEST(ElementwiseTest, SwigluForwardAndBackward) {
  const I64 rows = 3, cols = 5;
  auto x = random_vector(rows * 2 * cols, 34, -3.0f, 3.0f);
  std::vector<float> y(rows * cols);
  swiglu_forward(y.data(), x.data(), rows, cols);
  for (I64 r = 0; r < rows; ++r)
    for (I64 c = 0; c < cols; ++c) {
      const double g = x[r * 2 * cols + c], u = x[r * 2 * cols + cols + c];
      EXPECT_NEAR(y[r * cols + c], g / (1.0 + std::exp(-g)) * u, 1e-6);
    }
  const auto w = random_vector(y.size(), 35);
  std::vector<float> dx(x.size());
  swiglu_backward(dx.data(), x.data(), w.data(), rows, cols);
  const auto fd = fd_gradient(x, [&] {
    swiglu_forward(y.data(), x.data(), rows, cols);
    return weighted_sum(w, y.data());
  });
  expect_fd("elementwise_dx", dx, fd);
}

TEST(ElementwiseTest, AddBroadcastsAndItsAdjointSums) {
  const std::vector<float> a{1, 2, 3, 4, 5, 6}, b{10, 20};
  std::vector<float> y(6);
  add_forward(y.data(), a.data(), b.data(), 6, 2);
  EXPECT_EQ(y, (std::vector<float>{11, 22, 13, 24, 15, 26}));
  std::vector<float> da(6), db(2);
  add_backward(da.data(), db.data(), a.data(), 6, 2);
  EXPECT_EQ(da, a);
  EXPECT_EQ(db, (std::vector<float>{9, 12}));
  add_forward(y.data(), y.data(), a.data(), 6, 6);  // in place
  EXPECT_EQ(y[5], 32.0f);
}

TEST(DropoutTest, MaskIsDeterministicAndDropsAboutP) {
  const I64 n = 200000;
  const float p = 0.1f;
  const auto x = random_vector(n, 36);
  const std::uint64_t key = dropout_key(1234, "mb0.layer3.attn.dropout", 7);
  std::vector<float> y1(n), y2(n);
  std::vector<std::uint8_t> m1(n), m2(n);
  dropout_forward(y1.data(), m1.data(), x.data(), n, p, key);
  dropout_forward(y2.data(), m2.data(), x.data(), n, p, key);
  EXPECT_EQ(m1, m2);
  EXPECT_EQ(y1, y2);
  I64 dropped = 0;
  for (I64 i = 0; i < n; ++i) {
    dropped += m1[i] == 0;
    EXPECT_FLOAT_EQ(y1[i], m1[i] ? x[i] / (1.0f - p) : 0.0f);
  }
  // Binomial(n, p): σ = √(p(1-p)/n) ≈ 6.7e-4; allow 5σ.
  EXPECT_NEAR(static_cast<double>(dropped) / n, p, 3.5e-3);
  // Computed piecewise with first_index = the same mask.
  std::vector<float> y3(n);
  std::vector<std::uint8_t> m3(n);
  dropout_forward(y3.data(), m3.data(), x.data(), 1000, p, key);
  dropout_forward(y3.data() + 1000, m3.data() + 1000, x.data() + 1000, n - 1000, p, key, 1000);
  EXPECT_EQ(m3, m1);
}

TEST(DropoutTest, KeysSeparateOpsIterationsAndSeedsButNotForwardFromRecompute) {
  EXPECT_EQ(dropout_stem("mb0.layer3.attn.dropout.fwd"), "mb0.layer3.attn.dropout");
  EXPECT_EQ(dropout_stem("mb0.layer3.attn.dropout.recompute"), "mb0.layer3.attn.dropout");
  EXPECT_EQ(dropout_stem("nodot"), "nodot");
  std::set<std::uint64_t> keys{
      dropout_key(0, "mb0.layer3.attn.dropout", 0), dropout_key(0, "mb0.layer3.mlp.dropout", 0),
      dropout_key(0, "mb1.layer3.attn.dropout", 0), dropout_key(0, "mb0.layer3.attn.dropout", 1),
      dropout_key(1, "mb0.layer3.attn.dropout", 0)};
  EXPECT_EQ(keys.size(), 5u);
  // Two keys give unrelated masks: about p² of elements dropped by both.
  const std::uint64_t k1 = dropout_key(0, "a", 0), k2 = dropout_key(0, "a", 1);
  int both = 0;
  for (std::uint64_t i = 0; i < 100000; ++i)
    both += !dropout_keep(k1, i, 0.5f) && !dropout_keep(k2, i, 0.5f);
  EXPECT_NEAR(both / 100000.0, 0.25, 0.01);
  // u is a multiple of 2^-24 in [0, 1).
  for (std::uint64_t i = 0; i < 1000; ++i) {
    const float u = dropout_uniform(k1, i);
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
    ASSERT_EQ(u * 16777216.0f, std::floor(u * 16777216.0f));
  }
}

TEST(DropoutTest, BackwardFromStoredOrRegeneratedMaskMatchesFiniteDifferences) {
  const I64 n = 300;
  const float p = 0.3f;
  const std::uint64_t key = dropout_key(5, "mb0.embedding.dropout", 2);
  auto x = random_vector(n, 37);
  const auto w = random_vector(n, 38);
  std::vector<float> y(n), dx(n), dx2(n);
  std::vector<std::uint8_t> mask(n);
  dropout_forward(y.data(), mask.data(), x.data(), n, p, key);
  dropout_backward(dx.data(), w.data(), mask.data(), n, p);
  dropout_backward_regenerate(dx2.data(), w.data(), n, p, key);
  EXPECT_EQ(dx, dx2);
  const auto fd = fd_gradient(x, [&] {
    dropout_forward(y.data(), nullptr, x.data(), n, p, key);
    return weighted_sum(w, y.data());
  });
  expect_fd("elementwise_dx", dx, fd);
  // p = 0 is the identity.
  dropout_forward(y.data(), mask.data(), x.data(), n, 0.0f, key);
  EXPECT_EQ(y, x);
}

TEST(ElementwiseTest, BiasAddForwardAndAccumulatedBackward) {
  const I64 rows = 4, cols = 3;
  auto y = random_vector(rows * cols, 39);
  auto bias = random_vector(cols, 40);
  const auto y0 = y;
  bias_add_forward(y.data(), bias.data(), rows, cols);
  for (I64 r = 0; r < rows; ++r)
    for (I64 c = 0; c < cols; ++c) EXPECT_FLOAT_EQ(y[r * cols + c], y0[r * cols + c] + bias[c]);
  // FD on the bias with L = Σ W∘(y0 + bias); the gradient accumulates onto 0.5.
  const auto w = random_vector(rows * cols, 41);
  std::vector<float> db(cols, 0.5f), tmp(rows * cols);
  bias_add_backward(db.data(), w.data(), rows, cols);
  for (auto& v : db) v -= 0.5f;
  const auto fd = fd_gradient(bias, [&] {
    tmp = y0;
    bias_add_forward(tmp.data(), bias.data(), rows, cols);
    return weighted_sum(w, tmp.data());
  });
  expect_fd("elementwise_db", db, fd);
}

TEST(ElementwiseTest, ScaleAndCast) {
  std::vector<float> x{1, -2, std::nanf("")}, y(3);
  scale_forward(y.data(), x.data(), 2, 3.0f);
  EXPECT_EQ(y[1], -6.0f);
  scale_forward(y.data(), x.data(), 3, 0.0f);
  EXPECT_EQ(y, (std::vector<float>{0, 0, 0}));  // zeroing wipes NaN too
  cast_forward(y.data(), x.data(), 2);
  EXPECT_EQ(y[1], -2.0f);
}

// DiLoCo's outer step: PyTorch's SGD with Nesterov momentum on delta = anchor - average, in place;
// lr 1 with no momentum hands back the average itself.
TEST(OuterNesterov, StepsTheAnchorAlongTheOuterGradient) {
  std::vector<float> average{1.0f, -2.0f, 0.5f}, anchor{1.5f, -1.0f, 0.5f}, momentum{0.2f, 0.0f, -0.1f};
  std::vector<float> want(3), want_momentum(3);
  for (std::size_t i = 0; i < 3; ++i) {
    const double delta = anchor[i] - average[i];
    want_momentum[i] = static_cast<float>(0.9 * momentum[i] + delta);
    want[i] = static_cast<float>(anchor[i] - 0.7 * (delta + 0.9 * want_momentum[i]));
  }
  outer_nesterov(average.data(), anchor.data(), momentum.data(), 3, 0.7f, 0.9f);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_NEAR(momentum[i], want_momentum[i], 1e-6);
    EXPECT_NEAR(average[i], want[i], 1e-6);
    EXPECT_EQ(anchor[i], average[i]);
  }
  std::vector<float> plain{0.1f, 0.3f}, base{7.0f, -3.0f}, none{0.0f, 0.0f};
  outer_nesterov(plain.data(), base.data(), none.data(), 2, 1.0f, 0.0f);
  EXPECT_EQ(plain, (std::vector<float>{0.1f, 0.3f}));
  EXPECT_EQ(base, plain);
}

}  // namespace
}  // namespace tandem::kernels::cpu
