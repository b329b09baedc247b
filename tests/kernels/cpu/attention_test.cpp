#include "kernels/cpu/attention.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "kernels/cpu/elementwise.hpp"
#include "tests/kernels/cpu/kernel_test_support.hpp"

namespace tandem::kernels::cpu {
namespace {

using namespace testing;
using I64 = std::int64_t;

I64 qkv_numel(const AttentionShape& s) {
  return s.batch * s.seq * (s.heads + 2 * s.kv_heads) * s.head_dim;
}
I64 out_numel(const AttentionShape& s) { return s.batch * s.seq * s.heads * s.head_dim; }
I64 score_numel(const AttentionShape& s) { return s.batch * s.heads * s.seq * s.seq; }

struct Naive {
  std::vector<double> out, lse, probs;
};

// Straightforward attention in double with an explicit mask matrix.
Naive naive_attention(const std::vector<float>& qkv, const AttentionShape& s) {
  const I64 S = s.seq, D = s.head_dim, W = (s.heads + 2 * s.kv_heads) * D;
  Naive r;
  r.out.assign(out_numel(s), 0.0);
  r.lse.assign(s.batch * s.heads * S, 0.0);
  r.probs.assign(score_numel(s), 0.0);
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  for (I64 b = 0; b < s.batch; ++b)
    for (I64 h = 0; h < s.heads; ++h) {
      const I64 g = h * s.kv_heads / s.heads;
      for (I64 i = 0; i < S; ++i) {
        std::vector<double> score(S);
        std::vector<bool> visible(S);
        double mx = -std::numeric_limits<double>::infinity();
        for (I64 j = 0; j < S; ++j) {
          visible[j] = !s.causal || j <= i;
          double dot = 0.0;
          for (I64 d = 0; d < D; ++d)
            dot += static_cast<double>(qkv[(b * S + i) * W + h * D + d]) *
                   qkv[(b * S + j) * W + (s.heads + g) * D + d];
          score[j] = dot * scale;
          if (visible[j]) mx = std::max(mx, score[j]);
        }
        double sum = 0.0;
        for (I64 j = 0; j < S; ++j) sum += visible[j] ? std::exp(score[j] - mx) : 0.0;
        r.lse[(b * s.heads + h) * S + i] = mx + std::log(sum);
        for (I64 j = 0; j < S; ++j) {
          const double p = visible[j] ? std::exp(score[j] - mx) / sum : 0.0;
          r.probs[((b * s.heads + h) * S + i) * S + j] = p;
          for (I64 d = 0; d < D; ++d)
            r.out[(b * S + i) * s.heads * D + h * D + d] +=
                p * qkv[(b * S + j) * W + (s.heads + s.kv_heads + g) * D + d];
        }
      }
    }
  return r;
}

class AttentionForward : public ::testing::TestWithParam<AttentionShape> {};

TEST_P(AttentionForward, MatchesNaiveWithExplicitMask) {
  const AttentionShape s = GetParam();
  const auto qkv = random_vector(qkv_numel(s), 11, -2.0f, 2.0f);
  std::vector<float> out(out_numel(s)), lse(s.batch * s.heads * s.seq), probs(score_numel(s));
  attention_forward(out.data(), lse.data(), probs.data(), nullptr, nullptr, qkv.data(), s);
  const Naive want = naive_attention(qkv, s);
  EXPECT_LT(rel_error(out, want.out), 1e-5);
  EXPECT_LT(rel_error(lse, want.lse), 1e-5);
  EXPECT_LT(rel_error(probs, want.probs), 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Shapes, AttentionForward,
                         ::testing::Values(AttentionShape{2, 4, 4, 7, 5, true},    // MHA
                                           AttentionShape{2, 4, 2, 7, 5, true},    // GQA
                                           AttentionShape{1, 4, 1, 9, 8, true},    // MQA
                                           AttentionShape{2, 4, 2, 7, 5, false},   // bidirectional
                                           AttentionShape{1, 2, 2, 1, 3, true}));  // one token

TEST(AttentionTest, CausalMaskHidesTheFuture) {
  const AttentionShape s{1, 4, 2, 8, 4, true};
  auto qkv = random_vector(qkv_numel(s), 12);
  std::vector<float> before(out_numel(s)), after(out_numel(s));
  attention_forward(before.data(), nullptr, nullptr, nullptr, nullptr, qkv.data(), s);
  const I64 W = (s.heads + 2 * s.kv_heads) * s.head_dim, HD = s.heads * s.head_dim;
  const I64 changed = 5;  // every Q, K, V entry of token 5
  for (I64 c = 0; c < W; ++c) qkv[changed * W + c] += 1.5f;
  attention_forward(after.data(), nullptr, nullptr, nullptr, nullptr, qkv.data(), s);
  for (I64 i = 0; i < s.seq; ++i) {
    double diff = 0.0;
    for (I64 c = 0; c < HD; ++c) diff += std::abs(after[i * HD + c] - before[i * HD + c]);
    if (i < changed) EXPECT_EQ(diff, 0.0) << "token " << i << " saw token " << changed;
    else EXPECT_GT(diff, 1e-3) << "token " << i;
  }
}

// GQA equals MHA whose K/V heads are the GQA heads repeated over each group: forward outputs
// equal, dQ equal, and each GQA K/V gradient is the sum of its group's MHA gradients.
TEST(AttentionTest, GroupedQueryEqualsMhaWithRepeatedKvHeads) {
  const AttentionShape g{2, 6, 2, 5, 4, true};
  AttentionShape m = g;
  m.kv_heads = g.heads;
  const I64 D = g.head_dim, Wg = (g.heads + 2 * g.kv_heads) * D, Wm = 3 * g.heads * D;
  const I64 group = g.heads / g.kv_heads;
  const auto qkv_g = random_vector(qkv_numel(g), 13);
  std::vector<float> qkv_m(qkv_numel(m));
  const I64 tokens = g.batch * g.seq;
  for (I64 t = 0; t < tokens; ++t)
    for (I64 h = 0; h < g.heads; ++h)
      for (I64 d = 0; d < D; ++d) {
        const I64 kv = h / group;
        qkv_m[t * Wm + h * D + d] = qkv_g[t * Wg + h * D + d];
        qkv_m[t * Wm + (g.heads + h) * D + d] = qkv_g[t * Wg + (g.heads + kv) * D + d];
        qkv_m[t * Wm + (2 * g.heads + h) * D + d] =
            qkv_g[t * Wg + (g.heads + g.kv_heads + kv) * D + d];
      }
  std::vector<float> out_g(out_numel(g)), out_m(out_numel(m)), lse_g(g.batch * g.heads * g.seq),
      lse_m(lse_g.size());
  attention_forward(out_g.data(), lse_g.data(), nullptr, nullptr, nullptr, qkv_g.data(), g);
  attention_forward(out_m.data(), lse_m.data(), nullptr, nullptr, nullptr, qkv_m.data(), m);
  EXPECT_LT(rel_error(out_g, out_m), 1e-6);

  const auto dout = random_vector(out_numel(g), 14);
  std::vector<float> d_g(qkv_g.size()), d_m(qkv_m.size());
  attention_backward(d_g.data(), dout.data(), qkv_g.data(), lse_g.data(), nullptr, nullptr, g);
  attention_backward(d_m.data(), dout.data(), qkv_m.data(), lse_m.data(), nullptr, nullptr, m);
  std::vector<double> want(d_g.size(), 0.0);
  for (I64 t = 0; t < tokens; ++t)
    for (I64 h = 0; h < g.heads; ++h)
      for (I64 d = 0; d < D; ++d) {
        const I64 kv = h / group;
        want[t * Wg + h * D + d] = d_m[t * Wm + h * D + d];
        want[t * Wg + (g.heads + kv) * D + d] += d_m[t * Wm + (g.heads + h) * D + d];
        want[t * Wg + (g.heads + g.kv_heads + kv) * D + d] +=
            d_m[t * Wm + (2 * g.heads + h) * D + d];
      }
  EXPECT_LT(rel_error(d_g, want), 1e-5);
}

struct BackwardCase {
  AttentionShape shape;
  bool flash;  // save the logsumexp (and regenerate masks) instead of probs (and masks)
  float p;     // attention dropout
};

class AttentionBackward : public ::testing::TestWithParam<BackwardCase> {};

// L = Σ W∘out; d_qkv from attention_backward vs central differences over every qkv element.
// The dropout mask is a function of the key only, so it is the same in every probe.
TEST_P(AttentionBackward, MatchesFiniteDifferences) {
  const auto [s, flash, p] = GetParam();
  auto qkv = random_vector(qkv_numel(s), 15);
  const auto w = random_vector(out_numel(s), 16);
  const AttentionDropout drop{p, dropout_key(7, "mb0.layer0.attn.core", 3)};
  std::vector<float> out(out_numel(s)), lse(s.batch * s.heads * s.seq), probs(score_numel(s));
  std::vector<std::uint8_t> mask(score_numel(s));
  auto forward = [&] {
    if (flash)
      attention_forward(out.data(), lse.data(), nullptr, nullptr, nullptr, qkv.data(), s, drop);
    else
      attention_forward(out.data(), nullptr, probs.data(), p > 0 ? mask.data() : nullptr, nullptr,
                        qkv.data(), s, drop);
  };
  forward();
  std::vector<float> d_qkv(qkv.size(), 123.0f);  // overwritten, not accumulated
  if (flash)
    attention_backward(d_qkv.data(), w.data(), qkv.data(), lse.data(), nullptr, nullptr, s, drop);
  else
    attention_backward(d_qkv.data(), w.data(), qkv.data(), nullptr, probs.data(),
                       p > 0 ? mask.data() : nullptr, s, drop);
  const auto fd = fd_gradient(qkv, [&] {
    forward();
    return weighted_sum(w, out.data());
  });
  expect_fd("attention_d_qkv", d_qkv, fd);
}

INSTANTIATE_TEST_SUITE_P(
    Modes, AttentionBackward,
    ::testing::Values(BackwardCase{{2, 4, 2, 6, 3, true}, false, 0.0f},
                      BackwardCase{{2, 4, 2, 6, 3, true}, true, 0.0f},
                      BackwardCase{{2, 4, 2, 6, 3, true}, false, 0.25f},
                      BackwardCase{{2, 4, 2, 6, 3, true}, true, 0.25f},
                      BackwardCase{{1, 2, 1, 5, 4, false}, false, 0.0f},
                      BackwardCase{{1, 2, 1, 5, 4, false}, true, 0.25f}));

// With dropout, the fused ("flash": lse saved, mask regenerated) and unfused (probs and mask
// saved) paths compute the same thing from the same key.
TEST(AttentionTest, FlashAndUnfusedAgreeUnderDropout) {
  const AttentionShape s{2, 4, 2, 16, 8, true};
  const auto qkv = random_vector(qkv_numel(s), 17);
  const auto dout = random_vector(out_numel(s), 18);
  const AttentionDropout drop{0.1f, dropout_key(1, "mb3.layer2.attn.core", 9)};
  std::vector<float> out_f(out_numel(s)), out_u(out_numel(s)), lse(s.batch * s.heads * s.seq),
      probs(score_numel(s)), dropped(score_numel(s));
  std::vector<std::uint8_t> mask(score_numel(s));
  attention_forward(out_f.data(), lse.data(), nullptr, nullptr, nullptr, qkv.data(), s, drop);
  attention_forward(out_u.data(), nullptr, probs.data(), mask.data(), dropped.data(), qkv.data(),
                    s, drop);
  EXPECT_LT(rel_error(out_f, out_u), 1e-6);
  // The stored mask is the elementwise RNG at index ((b·heads + h)·s + i)·s + j, and dropped =
  // probs·mask/(1-p).
  I64 kept = 0;
  for (I64 e = 0; e < score_numel(s); ++e) {
    ASSERT_EQ(mask[e], dropout_keep(drop.key, static_cast<std::uint64_t>(e), drop.p) ? 1 : 0);
    kept += mask[e];
    EXPECT_FLOAT_EQ(dropped[e], mask[e] ? probs[e] / 0.9f : 0.0f);
  }
  EXPECT_NEAR(static_cast<double>(kept) / score_numel(s), 0.9, 0.03);
  std::vector<float> d_f(qkv.size()), d_u(qkv.size());
  attention_backward(d_f.data(), dout.data(), qkv.data(), lse.data(), nullptr, nullptr, s, drop);
  attention_backward(d_u.data(), dout.data(), qkv.data(), nullptr, probs.data(), mask.data(), s,
                     drop);
  EXPECT_LT(rel_error(d_f, d_u), 1e-5);
}

TEST(AttentionTest, RejectsKvHeadsNotDividingHeads) {
  const AttentionShape s{1, 4, 3, 2, 2, true};
  std::vector<float> qkv(100), out(100);
  EXPECT_THROW(attention_forward(out.data(), nullptr, nullptr, nullptr, nullptr, qkv.data(), s),
               std::invalid_argument);
}

}  // namespace
}  // namespace tandem::kernels::cpu
