// CUDA scaled-dot-product attention on the packed qkv layout of kernels/cpu/attention.hpp
// (token rows Q | K | V, grouped-query heads, causal mask, scale 1/√d, dropout on the
// probabilities with the counter-based mask of element ((b·heads + h)·s + i)·s + j).
//
// The products run through cuBLASLt, batched over the query heads that share a position in their
// KV group (strided views straight on qkv, no transposes or copies); masking, softmax, dropout
// and the softmax backward are row kernels. Scores live one batch entry at a time in a workspace
// ([heads, s, s] floats, or two/three of them backward), so memory grows with s² per sequence,
// not per micro-batch. "Flash" ops keep only the logsumexp and recompute the probabilities in
// backward, exactly as the CPU reference does; the unfused form saves probs (and mask/dropped).
//
// Context parallelism (cp_size > 1), as the CPU reference's contract: the `seq` query rows are
// member cp_rank's two zigzag chunks, K and V come from a separate kv [b, cp_size·seq,
// 2·kv_heads·d] (K | V) holding the whole sequence in member order, the causal mask compares
// sequence positions, and the dropout mask of score (i, j) is drawn at the index of its positions
// in the whole sequence's [S, S] matrix, ((b·heads + h)·S + pos(i))·S + pos(j) with S = cp_size·seq
// (which is the index above when cp_size is 1). Scores, probs, mask and dropped are then
// [b, heads, seq, cp_size·seq]; the K/V gradients go to d_kv (kv's layout).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <functional>

#include "kernels/cuda/gemm.cuh"

namespace tandem::kernels::cuda {

struct AttentionShape {
  std::int64_t batch = 0, heads = 0, kv_heads = 0, seq = 0, head_dim = 0;
  bool causal = true;
  int cp_size = 1, cp_rank = 0;
};

// Position in the whole sequence of row i of member r's `local` rows under the zigzag layout:
// strategies/op.hpp's zigzag_position (a host function there), the same arithmetic callable from
// the kernels; tests/kernels/cuda/cuda_kernels_test.cpp checks the two agree.
__host__ __device__ inline std::int64_t zigzag_position_hd(std::int64_t i, std::int64_t local, int cp, int r) {
  if (cp <= 1) return i;
  const std::int64_t c = local / 2;
  return i < c ? r * c + i : (2 * static_cast<std::int64_t>(cp) - 1 - r) * c + (i - c);
}

struct AttentionDropout {
  float p = 0.0f;
  std::uint64_t key = 0;
};

// Device scratch of at least `bytes`, valid until the next call (stream-ordered on `stream`).
using Workspace = std::function<void*(std::size_t bytes)>;

// Writes out and each non-null of lse [b, heads, s], probs / dropped [b, heads, s, kv_s] and
// mask (bytes, same indexing), kv_s = cp_size·s. `kv` is the gathered K/V, required when
// cp_size > 1 and ignored otherwise. Throws std::invalid_argument for an inconsistent shape.
void attention_forward(Blas& blas, float* out, float* lse, float* probs, std::uint8_t* mask, float* dropped,
                       const float* qkv, const AttentionShape& shape, const AttentionDropout& drop,
                       const Workspace& workspace, cudaStream_t stream, const float* kv = nullptr);
// d_qkv is OVERWRITTEN. Probabilities from `probs` when not null, else recomputed from `lse`;
// the dropout mask from `mask` when not null, else regenerated from drop.key when drop.p > 0.
// With context parallelism the K/V gradients go to d_kv (OVERWRITTEN, kv's layout) and the K/V
// columns of d_qkv are left 0.
void attention_backward(Blas& blas, float* d_qkv, const float* d_out, const float* qkv, const float* lse,
                        const float* probs, const std::uint8_t* mask, const AttentionShape& shape,
                        const AttentionDropout& drop, const Workspace& workspace, cudaStream_t stream,
                        const float* kv = nullptr, float* d_kv = nullptr);

}  // namespace tandem::kernels::cuda
