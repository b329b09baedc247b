// CPU reference embedding lookup (fp32), forward gather and backward scatter-add, with the
// vocab-parallel convention of Megatron-LM: a rank holds table rows [vocab_offset,
// vocab_offset + vocab) of the full table; a token id outside that range yields a zero row
// forward (the tensor-parallel all-reduce after the lookup sums the one rank that has it) and
// contributes nothing backward.
//
// Conventions (strategies/ops.hpp): forward inputs {table [vocab, hidden], ids [tokens]} outputs
// {rows [tokens, hidden]}; backward inputs {d_rows, ids} outputs {d_table} scatter-ADDED
// (a parameter gradient). Without an ids tensor the lookup is a position embedding: token t of
// a [batch, seq] block reads row first_position + (t mod seq).
#pragma once

#include <cstdint>

namespace tandem::kernels::cpu {

void embedding_forward(float* out, const float* table, const std::int32_t* ids,
                       std::int64_t tokens, std::int64_t vocab, std::int64_t hidden,
                       std::int64_t vocab_offset = 0);
void embedding_backward(float* d_table, const float* d_out, const std::int32_t* ids,
                        std::int64_t tokens, std::int64_t vocab, std::int64_t hidden,
                        std::int64_t vocab_offset = 0);

// Position embeddings: tokens = batch·seq, row first_position + (t mod seq); rows outside the
// table [0, table_rows) throw std::out_of_range (a sequence longer than the table).
void position_embedding_forward(float* out, const float* table, std::int64_t tokens,
                                std::int64_t seq, std::int64_t table_rows, std::int64_t hidden,
                                std::int64_t first_position = 0);
void position_embedding_backward(float* d_table, const float* d_out, std::int64_t tokens,
                                 std::int64_t seq, std::int64_t table_rows, std::int64_t hidden,
                                 std::int64_t first_position = 0);

}  // namespace tandem::kernels::cpu
