#include "kernels/cpu/adamw.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "tests/kernels/cpu/kernel_test_support.hpp"

namespace tandem::kernels::cpu {
namespace {

using namespace testing;

// One step by hand, in double, PyTorch AdamW semantics.
TEST(AdamWTest, OneStepMatchesHandComputation) {
  AdamWConfig cfg;
  cfg.lr = 1e-2f;
  cfg.beta1 = 0.9f;
  cfg.beta2 = 0.95f;
  cfg.eps = 1e-8f;
  cfg.weight_decay = 0.1f;
  cfg.grad_scale = 0.5f;
  cfg.step = 3;
  std::vector<float> p{1.0f, -2.0f, 0.5f}, g{0.4f, -1.0f, 0.0f}, m{0.1f, 0.2f, -0.3f},
      v{0.01f, 0.04f, 0.09f};
  std::vector<double> want(3), want_m(3), want_v(3);
  for (int i = 0; i < 3; ++i) {
    const double gs = g[i] * 0.5;
    want_m[i] = 0.9 * m[i] + 0.1 * gs;
    want_v[i] = 0.95 * v[i] + 0.05 * gs * gs;
    const double mh = want_m[i] / (1 - std::pow(0.9, 3)), vh = want_v[i] / (1 - std::pow(0.95, 3));
    want[i] = p[i] - 1e-2 * (mh / (std::sqrt(vh) + 1e-8) + 0.1 * p[i]);
  }
  adamw_update(p.data(), nullptr, m.data(), v.data(), g.data(), 3, cfg);
  EXPECT_LT(rel_error(p, want), 1e-6);
  EXPECT_LT(rel_error(m, want_m), 1e-6);
  EXPECT_LT(rel_error(v, want_v), 1e-6);
  // For reference, element 0: p = 1 − 0.01·(0.11/0.271 / (√(0.0115/0.142625) + 1e-8) + 0.1).
  EXPECT_NEAR(p[0], 1.0 - 0.01 * ((0.11 / 0.271) / std::sqrt(0.0115 / 0.142625) + 0.1), 1e-6);
}

TEST(AdamWTest, FirstStepMovesByAboutLrTimesSign) {
  AdamWConfig cfg;
  cfg.lr = 1e-3f;
  cfg.weight_decay = 0.0f;
  std::vector<float> p{0.0f, 0.0f}, g{3.0f, -1e-3f}, m(2, 0.0f), v(2, 0.0f);
  adamw_update(p.data(), nullptr, m.data(), v.data(), g.data(), 2, cfg);
  EXPECT_NEAR(p[0], -1e-3, 1e-9);  // m̂/√v̂ = g/|g| at step 1
  EXPECT_NEAR(p[1], 1e-3, 1e-8);
}

TEST(AdamWTest, MasterCopyIsUpdatedAndCopiedToTheParameter) {
  AdamWConfig cfg;
  std::vector<float> p{0.0f}, master{2.0f}, g{1.0f}, m{0.0f}, v{0.0f};
  adamw_update(p.data(), master.data(), m.data(), v.data(), g.data(), 1, cfg);
  EXPECT_NEAR(master[0], 2.0f - 3e-4f * (1.0f + 0.1f * 2.0f), 1e-6);
  EXPECT_EQ(p[0], master[0]);
  cfg.step = 0;
  EXPECT_THROW(adamw_update(p.data(), master.data(), m.data(), v.data(), g.data(), 1, cfg),
               std::invalid_argument);
}

}  // namespace
}  // namespace tandem::kernels::cpu
