#include "kernels/cpu/embedding.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

namespace tandem::kernels::cpu {
namespace {

using I64 = std::int64_t;

I64 position_row(I64 t, I64 seq, I64 table_rows, I64 first_position) {
  const I64 row = first_position + t % seq;
  if (row < 0 || row >= table_rows)
    throw std::out_of_range("position embedding: position " + std::to_string(row) +
                            " outside the table of " + std::to_string(table_rows) + " rows");
  return row;
}

}  // namespace

void embedding_forward(float* out, const float* table, const std::int32_t* ids, I64 tokens,
                       I64 vocab, I64 hidden, I64 vocab_offset) {
  for (I64 t = 0; t < tokens; ++t) {
    const I64 row = static_cast<I64>(ids[t]) - vocab_offset;
    float* o = out + t * hidden;
    if (row < 0 || row >= vocab) std::fill(o, o + hidden, 0.0f);  // another shard's row
    else std::memcpy(o, table + row * hidden, sizeof(float) * static_cast<std::size_t>(hidden));
  }
}

void embedding_backward(float* d_table, const float* d_out, const std::int32_t* ids, I64 tokens,
                        I64 vocab, I64 hidden, I64 vocab_offset) {
  // Sequential over tokens: repeated ids accumulate in token order, deterministically.
  for (I64 t = 0; t < tokens; ++t) {
    const I64 row = static_cast<I64>(ids[t]) - vocab_offset;
    if (row < 0 || row >= vocab) continue;
    float* d = d_table + row * hidden;
    const float* g = d_out + t * hidden;
    for (I64 c = 0; c < hidden; ++c) d[c] += g[c];
  }
}

void position_embedding_forward(float* out, const float* table, I64 tokens, I64 seq,
                                I64 table_rows, I64 hidden, I64 first_position) {
  for (I64 t = 0; t < tokens; ++t) {
    const I64 row = position_row(t, seq, table_rows, first_position);
    std::memcpy(out + t * hidden, table + row * hidden,
                sizeof(float) * static_cast<std::size_t>(hidden));
  }
}

void position_embedding_backward(float* d_table, const float* d_out, I64 tokens, I64 seq,
                                 I64 table_rows, I64 hidden, I64 first_position) {
  for (I64 t = 0; t < tokens; ++t) {
    float* d = d_table + position_row(t, seq, table_rows, first_position) * hidden;
    const float* g = d_out + t * hidden;
    for (I64 c = 0; c < hidden; ++c) d[c] += g[c];
  }
}

}  // namespace tandem::kernels::cpu
