// Context-parallel attention (AttentionShape cp_size > 1): each rank's zigzag chunks of queries
// against the whole sequence's gathered K/V give the rows, logsumexps and gradients the
// whole-sequence kernel gives at those positions (the whole-sequence kernel itself is checked
// against a naive double-precision attention in attention_test.cpp). Dropout on, so the mask
// drawn from sequence positions is checked too; both backward paths (recomputed from the
// logsumexp with regenerated masks, and from stored probabilities and masks).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/cpu/attention.hpp"
#include "strategies/op.hpp"
#include "tests/kernels/cpu/kernel_test_support.hpp"

namespace tandem::kernels::cpu {
namespace {

using I64 = std::int64_t;
constexpr double kTolerance = 1e-5;

struct Whole {
  AttentionShape shape{2, 4, 2, 16, 8, true};
  AttentionDropout drop{0.2f, 977};
  I64 width() const { return (shape.heads + 2 * shape.kv_heads) * shape.head_dim; }
  I64 kv_width() const { return 2 * shape.kv_heads * shape.head_dim; }
  I64 out_width() const { return shape.heads * shape.head_dim; }
  std::vector<float> qkv = testing::random_vector(static_cast<std::size_t>(shape.batch * shape.seq * width()), 1);
  std::vector<float> d_out =
      testing::random_vector(static_cast<std::size_t>(shape.batch * shape.seq * out_width()), 2);
};

// Rows at `positions` of a [b, seq, width] tensor, columns [first, first + count).
std::vector<float> rows_at(const std::vector<float>& t, I64 batch, I64 seq, I64 width, const std::vector<I64>& positions,
                           I64 first, I64 count) {
  std::vector<float> out;
  for (I64 b = 0; b < batch; ++b)
    for (I64 p : positions)
      for (I64 c = 0; c < count; ++c) out.push_back(t[static_cast<std::size_t>((b * seq + p) * width + first + c)]);
  return out;
}

std::vector<I64> zigzag_rows(I64 local, int cp, int member) {
  std::vector<I64> p;
  for (I64 i = 0; i < local; ++i) p.push_back(zigzag_position(i, local, cp, member));
  return p;
}

void expect_near_all(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], kTolerance) << what << " [" << i << "]";
}

class ContextParallelAttention : public ::testing::TestWithParam<std::tuple<int, bool>> {};

TEST_P(ContextParallelAttention, RanksComputeTheWholeSequencesRowsAndGradients) {
  const auto [cp, stored] = GetParam();
  Whole w;
  const AttentionShape& s = w.shape;
  const I64 S = s.seq, B = s.batch, scores = B * s.heads * S * S;
  // The whole sequence on one rank.
  std::vector<float> out(static_cast<std::size_t>(B * S * w.out_width())), lse(static_cast<std::size_t>(B * s.heads * S));
  std::vector<float> probs(static_cast<std::size_t>(scores)), dropped(static_cast<std::size_t>(scores));
  std::vector<std::uint8_t> mask(static_cast<std::size_t>(scores));
  attention_forward(out.data(), lse.data(), probs.data(), mask.data(), dropped.data(), w.qkv.data(), s, w.drop);
  std::vector<float> d_qkv(w.qkv.size());
  attention_backward(d_qkv.data(), w.d_out.data(), w.qkv.data(), lse.data(), nullptr, nullptr, s, w.drop);

  // The K|V columns of every member's rows, in member order: what the all-gather assembles.
  const I64 local = S / cp;
  std::vector<float> kv;
  for (I64 b = 0; b < B; ++b)
    for (int m = 0; m < cp; ++m) {
      for (I64 i = 0; i < local; ++i)
        for (I64 c = 0; c < w.kv_width(); ++c)
          kv.push_back(w.qkv[static_cast<std::size_t>((b * S + zigzag_position(i, local, cp, m)) * w.width() +
                                                      s.heads * s.head_dim + c)]);
    }
  std::vector<float> d_kv_sum(kv.size(), 0.0f);
  for (int r = 0; r < cp; ++r) {
    AttentionShape mine = s;
    mine.seq = local;
    mine.cp_size = cp;
    mine.cp_rank = r;
    const std::vector<I64> rows = zigzag_rows(local, cp, r);
    const std::vector<float> qkv = rows_at(w.qkv, B, S, w.width(), rows, 0, w.width());
    const I64 my_scores = B * s.heads * local * S;
    std::vector<float> o(static_cast<std::size_t>(B * local * w.out_width())), l(static_cast<std::size_t>(B * s.heads * local));
    std::vector<float> p(static_cast<std::size_t>(my_scores)), pd(static_cast<std::size_t>(my_scores));
    std::vector<std::uint8_t> mk(static_cast<std::size_t>(my_scores));
    attention_forward(o.data(), l.data(), p.data(), mk.data(), pd.data(), qkv.data(), mine, w.drop, kv.data());
    const std::string at = "cp " + std::to_string(cp) + " rank " + std::to_string(r);
    expect_near_all(o, rows_at(out, B, S, w.out_width(), rows, 0, w.out_width()), at + " output");
    for (I64 bh = 0; bh < B * s.heads; ++bh)
      for (I64 i = 0; i < local; ++i)
        ASSERT_NEAR(l[static_cast<std::size_t>(bh * local + i)], lse[static_cast<std::size_t>(bh * S + rows[i])], kTolerance)
            << at << " logsumexp";

    const std::vector<float> d_out = rows_at(w.d_out, B, S, w.out_width(), rows, 0, w.out_width());
    std::vector<float> dq(qkv.size()), dkv(kv.size());
    attention_backward(dq.data(), d_out.data(), qkv.data(), stored ? nullptr : l.data(), stored ? p.data() : nullptr,
                       stored ? mk.data() : nullptr, mine, w.drop, kv.data(), dkv.data());
    const I64 q_cols = s.heads * s.head_dim;
    std::vector<I64> every_row(static_cast<std::size_t>(local));
    for (I64 i = 0; i < local; ++i) every_row[static_cast<std::size_t>(i)] = i;
    expect_near_all(rows_at(dq, B, local, w.width(), every_row, 0, q_cols),
                    rows_at(d_qkv, B, S, w.width(), rows, 0, q_cols), at + " dQ");
    for (std::size_t i = 0; i < dkv.size(); ++i) d_kv_sum[i] += dkv[i];
  }
  // The reduce-scatter's sum of every rank's K/V gradient, member order back to positions.
  for (I64 b = 0; b < B; ++b)
    for (int m = 0; m < cp; ++m)
      for (I64 i = 0; i < local; ++i)
        for (I64 c = 0; c < w.kv_width(); ++c) {
          const I64 position = zigzag_position(i, local, cp, m);
          ASSERT_NEAR(d_kv_sum[static_cast<std::size_t>(((b * cp + m) * local + i) * w.kv_width() + c)],
                      d_qkv[static_cast<std::size_t>((b * S + position) * w.width() + s.heads * s.head_dim + c)],
                      kTolerance)
              << "cp " << cp << " dK|dV at position " << position;
        }
}

INSTANTIATE_TEST_SUITE_P(Zigzag, ContextParallelAttention,
                         ::testing::Combine(::testing::Values(2, 4), ::testing::Bool()),
                         [](const auto& info) {
                           return "cp" + std::to_string(std::get<0>(info.param)) +
                                  (std::get<1>(info.param) ? "_stored_probs" : "_from_logsumexp");
                         });

TEST(ContextParallelAttention, RefusesAMissingGatheredKeyValueTensor) {
  AttentionShape s{1, 2, 2, 4, 4, true, 2, 0};
  std::vector<float> qkv(static_cast<std::size_t>(4 * 6 * 4)), out(static_cast<std::size_t>(4 * 2 * 4));
  EXPECT_THROW(attention_forward(out.data(), nullptr, nullptr, nullptr, nullptr, qkv.data(), s), std::invalid_argument);
}

TEST(ContextParallelAttention, ZigzagChunksGiveEveryRankAsManyCausalScores) {
  // Rank r holds chunks r and 2cp-1-r: (2cp-1)c² + c(c+1) visible scores whatever r.
  const int cp = 4;
  const I64 local = 8, whole = local * cp;
  I64 first = -1;
  for (int r = 0; r < cp; ++r) {
    I64 visible = 0;
    for (I64 i = 0; i < local; ++i) visible += zigzag_position(i, local, cp, r) + 1;
    if (first < 0) first = visible;
    EXPECT_EQ(visible, first) << "rank " << r;
  }
  EXPECT_EQ(first * cp, whole * (whole + 1) / 2);
}

}  // namespace
}  // namespace tandem::kernels::cpu
