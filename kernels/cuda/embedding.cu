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

// gather or scatter_add over the tokens·hidden elements of the rows (ids == nullptr: positions).
using RowKernel = void (*)(float*, const float*, const std::int32_t*, I64, I64, I64, I64, I64);
void launch_rows(RowKernel kernel, float* dst, const float* src, const std::int32_t* ids, I64 tokens, I64 vocab,
                 I64 hidden, I64 offset, I64 seq, cudaStream_t stream) {
  if (tokens * hidden <= 0) return;
  kernel<<<blocks_for(tokens * hidden), kThreads, 0, stream>>>(dst, src, ids, tokens, vocab, hidden, offset, seq);
  CUDA_CHECK_LAUNCH();
}

}  // namespace

void embedding_forward(float* out, const float* table, const std::int32_t* ids, I64 tokens, I64 vocab,
                       I64 hidden, I64 vocab_offset, cudaStream_t stream) {
  launch_rows(gather, out, table, ids, tokens, vocab, hidden, vocab_offset, 1, stream);
}
void embedding_backward(float* d_table, const float* d_out, const std::int32_t* ids, I64 tokens, I64 vocab,
                        I64 hidden, I64 vocab_offset, cudaStream_t stream) {
  launch_rows(scatter_add, d_table, d_out, ids, tokens, vocab, hidden, vocab_offset, 1, stream);
}
void position_embedding_forward(float* out, const float* table, I64 tokens, I64 seq, I64 hidden,
                                I64 first_position, cudaStream_t stream) {
  launch_rows(gather, out, table, nullptr, tokens, 0, hidden, first_position, seq, stream);
}
void position_embedding_backward(float* d_table, const float* d_out, I64 tokens, I64 seq, I64 hidden,
                                 I64 first_position, cudaStream_t stream) {
  launch_rows(scatter_add, d_table, d_out, nullptr, tokens, 0, hidden, first_position, seq, stream);
}

}  // namespace tandem::kernels::cuda
