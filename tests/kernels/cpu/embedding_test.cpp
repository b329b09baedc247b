#include "kernels/cpu/embedding.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

#include "tests/kernels/cpu/kernel_test_support.hpp"

namespace tandem::kernels::cpu {
namespace {

using namespace testing;
using I64 = std::int64_t;

TEST(EmbeddingTest, ForwardGathersRows) {
  const I64 vocab = 7, hidden = 4;
  const auto table = random_vector(vocab * hidden, 51);
  const std::vector<std::int32_t> ids{3, 0, 6, 3};
  std::vector<float> out(ids.size() * hidden);
  embedding_forward(out.data(), table.data(), ids.data(), 4, vocab, hidden);
  for (I64 t = 0; t < 4; ++t)
    for (I64 c = 0; c < hidden; ++c) EXPECT_EQ(out[t * hidden + c], table[ids[t] * hidden + c]);
}

// Vocab-parallel: each shard zero-fills the ids it does not hold, so the shards' outputs sum
// (the tensor-parallel all-reduce) to the full lookup, and the shards' gradients are the
// slices of the full gradient.
TEST(EmbeddingTest, VocabShardsSumToTheFullLookup) {
  const I64 vocab = 10, hidden = 3, shard = 5, tokens = 6;
  const auto table = random_vector(vocab * hidden, 52);
  const std::vector<std::int32_t> ids{9, 0, 4, 5, 5, 2};
  std::vector<float> full(tokens * hidden), a(tokens * hidden), b(tokens * hidden);
  embedding_forward(full.data(), table.data(), ids.data(), tokens, vocab, hidden);
  embedding_forward(a.data(), table.data(), ids.data(), tokens, shard, hidden, 0);
  embedding_forward(b.data(), table.data() + shard * hidden, ids.data(), tokens, shard, hidden,
                    shard);
  for (I64 i = 0; i < tokens * hidden; ++i) EXPECT_EQ(a[i] + b[i], full[i]);

  const auto d_out = random_vector(tokens * hidden, 53);
  std::vector<float> d_full(vocab * hidden, 0.0f), d_shards(vocab * hidden, 0.0f);
  embedding_backward(d_full.data(), d_out.data(), ids.data(), tokens, vocab, hidden);
  embedding_backward(d_shards.data(), d_out.data(), ids.data(), tokens, shard, hidden, 0);
  embedding_backward(d_shards.data() + shard * hidden, d_out.data(), ids.data(), tokens, shard,
                     hidden, shard);
  EXPECT_EQ(d_full, d_shards);
}

// Backward (scatter-add, repeated ids accumulate) vs central differences on the table.
TEST(EmbeddingTest, BackwardMatchesFiniteDifferences) {
  const I64 vocab = 6, hidden = 3, tokens = 7;
  auto table = random_vector(vocab * hidden, 54);
  const std::vector<std::int32_t> ids{1, 4, 1, 0, 5, 1, 4};
  const auto w = random_vector(tokens * hidden, 55);
  std::vector<float> out(tokens * hidden), d_table(vocab * hidden, 0.0f);
  embedding_backward(d_table.data(), w.data(), ids.data(), tokens, vocab, hidden);
  const auto fd = fd_gradient(table, [&] {
    embedding_forward(out.data(), table.data(), ids.data(), tokens, vocab, hidden);
    return weighted_sum(w, out.data());
  });
  expect_fd("embedding_d_table", d_table, fd);
  EXPECT_EQ(d_table[2 * hidden], 0.0f);  // id 2 never used
}

TEST(EmbeddingTest, PositionsRepeatPerSequence) {
  const I64 rows = 8, hidden = 2, batch = 2, seq = 3;
  const auto table = random_vector(rows * hidden, 56);
  std::vector<float> out(batch * seq * hidden);
  position_embedding_forward(out.data(), table.data(), batch * seq, seq, rows, hidden);
  for (I64 t = 0; t < batch * seq; ++t)
    EXPECT_EQ(out[t * hidden + 1], table[(t % seq) * hidden + 1]);
  // A shard of a sequence starting at position 3.
  position_embedding_forward(out.data(), table.data(), batch * seq, seq, rows, hidden, 3);
  EXPECT_EQ(out[2 * hidden], table[5 * hidden]);
  // Backward: position p receives the sum over the batch.
  const auto d = random_vector(batch * seq * hidden, 57);
  std::vector<float> dt(rows * hidden, 0.0f);
  position_embedding_backward(dt.data(), d.data(), batch * seq, seq, rows, hidden);
  EXPECT_FLOAT_EQ(dt[1 * hidden], d[1 * hidden] + d[4 * hidden]);
  EXPECT_EQ(dt[3 * hidden], 0.0f);
  EXPECT_THROW(position_embedding_forward(out.data(), table.data(), 6, 3, rows, hidden, 6),
               std::out_of_range);
}

}  // namespace
}  // namespace tandem::kernels::cpu
