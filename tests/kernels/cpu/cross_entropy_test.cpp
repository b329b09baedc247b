#include "kernels/cpu/cross_entropy.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "tests/kernels/cpu/kernel_test_support.hpp"

namespace tandem::kernels::cpu {
namespace {

using namespace testing;
using I64 = std::int64_t;

TEST(CrossEntropyTest, UniformLogitsGiveLogV) {
  const I64 tokens = 5, vocab = 1000;
  std::vector<float> logits(tokens * vocab, 3.25f), softmax(logits.size()), stats(2 * tokens);
  const std::vector<std::int32_t> labels{0, 999, 17, 500, 3};
  cross_entropy_forward(softmax.data(), stats.data(), logits.data(), labels.data(), tokens, vocab);
  EXPECT_NEAR(cross_entropy_mean_loss(stats.data(), tokens), std::log(1000.0), 1e-5);
  EXPECT_NEAR(softmax[1234], 1e-3, 1e-9);
  EXPECT_NEAR(stats[1], 3.25 + std::log(1000.0), 1e-5);  // lse
}

TEST(CrossEntropyTest, ForwardMatchesNaiveAndIsStableForLargeLogits) {
  const I64 tokens = 4, vocab = 11;
  auto logits = random_vector(tokens * vocab, 61, -5.0f, 5.0f);
  logits[3] = 200.0f;  // exp(200) overflows a float: must not matter
  const std::vector<std::int32_t> labels{3, 10, 0, 7};
  std::vector<float> softmax(logits.size()), stats(2 * tokens);
  cross_entropy_forward(softmax.data(), stats.data(), logits.data(), labels.data(), tokens, vocab);
  double mean = 0.0;
  for (I64 t = 0; t < tokens; ++t) {
    double mx = -1e300, sum = 0.0;
    for (I64 j = 0; j < vocab; ++j) mx = std::max(mx, static_cast<double>(logits[t * vocab + j]));
    for (I64 j = 0; j < vocab; ++j) sum += std::exp(logits[t * vocab + j] - mx);
    const double lse = mx + std::log(sum);
    for (I64 j = 0; j < vocab; ++j)
      EXPECT_NEAR(softmax[t * vocab + j], std::exp(logits[t * vocab + j] - lse), 1e-6);
    EXPECT_NEAR(stats[2 * t], lse - logits[t * vocab + labels[t]], 1e-5);
    mean += (lse - logits[t * vocab + labels[t]]) / tokens;
  }
  EXPECT_NEAR(cross_entropy_mean_loss(stats.data(), tokens), mean, 1e-5);
  EXPECT_NEAR(stats[0], 0.0, 1e-5);  // token 0's label is the huge logit
}

// The mean loss's gradient: backward with grad_scale = 1/tokens vs central differences.
TEST(CrossEntropyTest, BackwardMatchesFiniteDifferences) {
  const I64 tokens = 5, vocab = 7;
  auto logits = random_vector(tokens * vocab, 62, -3.0f, 3.0f);
  const std::vector<std::int32_t> labels{1, 6, -1, 0, 3};  // token 2 ignored (padding)
  std::vector<float> softmax(logits.size()), stats(2 * tokens), d(logits.size(), 9.0f);
  cross_entropy_forward(softmax.data(), stats.data(), logits.data(), labels.data(), tokens, vocab);
  cross_entropy_backward(d.data(), softmax.data(), labels.data(), tokens, vocab, 1.0f / tokens);
  const auto fd = fd_gradient(logits, [&] {
    cross_entropy_forward(nullptr, stats.data(), logits.data(), labels.data(), tokens, vocab);
    return static_cast<double>(cross_entropy_mean_loss(stats.data(), tokens));
  });
  expect_fd("cross_entropy_d", d, fd);
  EXPECT_EQ(stats[4], 0.0f);                // ignored token: no loss
  for (I64 j = 0; j < vocab; ++j) EXPECT_EQ(d[2 * vocab + j], 0.0f);  // and no gradient
}

// Vocab-parallel: shard stats merged across shards give the unsharded softmax and loss, and
// each shard's backward (with its offset) is its slice of the unsharded gradient.
TEST(CrossEntropyTest, VocabShardsReproduceTheFullSoftmax) {
  const I64 tokens = 4, vocab = 12, shards = 3, local = vocab / shards;
  const auto logits = random_vector(tokens * vocab, 63, -4.0f, 4.0f);
  const std::vector<std::int32_t> labels{0, 5, 11, 8};
  std::vector<float> softmax(logits.size()), stats(2 * tokens), d(logits.size());
  cross_entropy_forward(softmax.data(), stats.data(), logits.data(), labels.data(), tokens, vocab);
  cross_entropy_backward(d.data(), softmax.data(), labels.data(), tokens, vocab, 1.0f / tokens);

  std::vector<std::vector<float>> shard_logits(shards, std::vector<float>(tokens * local));
  // Step 1 and the all-reduce MAX.
  std::vector<float> global_max(tokens, -1e30f), row_max(tokens);
  for (I64 r = 0; r < shards; ++r) {
    for (I64 t = 0; t < tokens; ++t)
      for (I64 j = 0; j < local; ++j)
        shard_logits[r][t * local + j] = logits[t * vocab + r * local + j];
    softmax_shard_max(row_max.data(), shard_logits[r].data(), tokens, local);
    for (I64 t = 0; t < tokens; ++t) global_max[t] = std::max(global_max[t], row_max[t]);
  }
  // Step 2 and the all-reduce SUM (in reverse order: the order must not matter beyond round-off).
  std::vector<float> sums(2 * tokens, 0.0f), part(2 * tokens);
  for (I64 r = shards - 1; r >= 0; --r) {
    softmax_shard_sum_exp(part.data(), shard_logits[r].data(), labels.data(), global_max.data(),
                          tokens, local, r * local);
    for (I64 i = 0; i < 2 * tokens; ++i) sums[i] += part[i];
  }
  for (I64 r = 0; r < shards; ++r) {
    std::vector<float> sm(tokens * local), st(2 * tokens), dl(tokens * local);
    cross_entropy_shard_finish(sm.data(), st.data(), shard_logits[r].data(), global_max.data(),
                               sums.data(), labels.data(), tokens, local);
    cross_entropy_backward(dl.data(), sm.data(), labels.data(), tokens, local, 1.0f / tokens,
                           r * local);
    for (I64 t = 0; t < tokens; ++t) {
      EXPECT_NEAR(st[2 * t], stats[2 * t], 1e-5);
      for (I64 j = 0; j < local; ++j) {
        EXPECT_NEAR(sm[t * local + j], softmax[t * vocab + r * local + j], 1e-6);
        EXPECT_NEAR(dl[t * local + j], d[t * vocab + r * local + j], 1e-6);
      }
    }
  }
}

}  // namespace
}  // namespace tandem::kernels::cpu
