#include "kernels/cuda/embedding.cuh"

#include "kernels/cuda/check.hpp"
#include "kernels/cuda/rng.cuh"

namespace tandem::kernels::cuda {
namespace {

using I64 = std::int64_t;
constexpr int kThreads = 256;

// Row of token t: the id's row in this shard (ids) or its position (ids == nullptr); -1: none.
__device__ __forceinline__ I64 row_of(const std::int32_t* ids, I64 t, I64 vocab, I64 offset, I64 seq) {
  if (!ids) return offset + t % seq;
  const I64 row = static_cast<I64>(ids[t]) - offset;
  return row >= 0 && row < vocab ? row : -1;
}

__global__ void gather(float* out, const float* table, const std::int32_t* ids, I64 tokens, I64 vocab, I64 hidden,
                       I64 offset, I64 seq) {
  for (I64 i = blockIdx.x * static_cast<I64>(blockDim.x) + threadIdx.x; i < tokens * hidden;
       i += static_cast<I64>(gridDim.x) * blockDim.x) {
    const I64 t = i / hidden, c = i - t * hidden;
    const I64 row = row_of(ids, t, vocab, offset, seq);
    out[i] = row < 0 ? 0.0f : table[row * hidden + c];
  }
}

__global__ void scatter_add(float* d_table, const float* d_out, const std::int32_t* ids, I64 tokens, I64 vocab,
                            I64 hidden, I64 offset, I64 seq) {
  for (I64 i = blockIdx.x * static_cast<I64>(blockDim.x) + threadIdx.x; i < tokens * hidden;
       i += static_cast<I64>(gridDim.x) * blockDim.x) {
    const I64 t = i / hidden, c = i - t * hidden;
    const I64 row = row_of(ids, t, vocab, offset, seq);
    if (row >= 0) atomicAdd(d_table + row * hidden + c, d_out[i]);
  }
}

}  // namespace

void embedding_forward(float* out, const float* table, const std::int32_t* ids, I64 tokens, I64 vocab,
                       I64 hidden, I64 vocab_offset, cudaStream_t stream) {
  if (tokens * hidden <= 0) return;
  gather<<<blocks_for(tokens * hidden), kThreads, 0, stream>>>(out, table, ids, tokens, vocab, hidden,
                                                                vocab_offset, 1);
  CUDA_CHECK_LAUNCH();
}
void embedding_backward(float* d_table, const float* d_out, const std::int32_t* ids, I64 tokens, I64 vocab,
                        I64 hidden, I64 vocab_offset, cudaStream_t stream) {
  if (tokens * hidden <= 0) return;
  scatter_add<<<blocks_for(tokens * hidden), kThreads, 0, stream>>>(d_table, d_out, ids, tokens, vocab, hidden,
                                                                     vocab_offset, 1);
  CUDA_CHECK_LAUNCH();
}
void position_embedding_forward(float* out, const float* table, I64 tokens, I64 seq, I64 hidden,
                                I64 first_position, cudaStream_t stream) {
  if (tokens * hidden <= 0) return;
  gather<<<blocks_for(tokens * hidden), kThreads, 0, stream>>>(out, table, nullptr, tokens, 0, hidden,
                                                                first_position, seq);
  CUDA_CHECK_LAUNCH();
}
void position_embedding_backward(float* d_table, const float* d_out, I64 tokens, I64 seq, I64 hidden,
                                 I64 first_position, cudaStream_t stream) {
  if (tokens * hidden <= 0) return;
  scatter_add<<<blocks_for(tokens * hidden), kThreads, 0, stream>>>(d_table, d_out, nullptr, tokens, 0, hidden,
                                                                     first_position, seq);
  CUDA_CHECK_LAUNCH();
}

}  // namespace tandem::kernels::cuda
