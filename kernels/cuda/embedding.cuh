// CUDA embedding gather / scatter-add (fp32), the contract of kernels/cpu/embedding.hpp:
// vocab-parallel rows [vocab_offset, vocab_offset + vocab) (another shard's id gives a zero row
// forward and nothing backward); position lookups read row first_position + (t mod seq). The
// backward ACCUMULATES into the table gradient (atomics: repeated ids sum in any order).
// Position bounds are checked on the host by the dispatcher (they depend on shapes only).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace tandem::kernels::cuda {

void embedding_forward(float* out, const float* table, const std::int32_t* ids, std::int64_t tokens,
                       std::int64_t vocab, std::int64_t hidden, std::int64_t vocab_offset, cudaStream_t stream);
void embedding_backward(float* d_table, const float* d_out, const std::int32_t* ids, std::int64_t tokens,
                        std::int64_t vocab, std::int64_t hidden, std::int64_t vocab_offset, cudaStream_t stream);
// Positions: host-checked bounds (first_position + min(seq, tokens) − 1 < table_rows).
void position_embedding_forward(float* out, const float* table, std::int64_t tokens, std::int64_t seq,
                                std::int64_t hidden, std::int64_t first_position, cudaStream_t stream);
void position_embedding_backward(float* d_table, const float* d_out, std::int64_t tokens, std::int64_t seq,
                                 std::int64_t hidden, std::int64_t first_position, cudaStream_t stream);

}  // namespace tandem::kernels::cuda
