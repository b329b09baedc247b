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
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <functional>

#include "kernels/cuda/gemm.cuh"

namespace tandem::kernels::cuda {

struct AttentionShape {
  std::int64_t batch = 0, heads = 0, kv_heads = 0, seq = 0, head_dim = 0;
  bool causal = true;
};

struct AttentionDropout {
  float p = 0.0f;
  std::uint64_t key = 0;
};

// Device scratch of at least `bytes`, valid until the next call (stream-ordered on `stream`).
using Workspace = std::function<void*(std::size_t bytes)>;

// Writes out and each non-null of lse [b, heads, s], probs / dropped [b, heads, s, s] and
// mask (bytes, same indexing). Throws std::invalid_argument for an inconsistent shape.
void attention_forward(Blas& blas, float* out, float* lse, float* probs, std::uint8_t* mask, float* dropped,
                       const float* qkv, const AttentionShape& shape, const AttentionDropout& drop,
                       const Workspace& workspace, cudaStream_t stream);
// d_qkv is OVERWRITTEN. Probabilities from `probs` when not null, else recomputed from `lse`;
// the dropout mask from `mask` when not null, else regenerated from drop.key when drop.p > 0.
void attention_backward(Blas& blas, float* d_qkv, const float* d_out, const float* qkv, const float* lse,
                        const float* probs, const std::uint8_t* mask, const AttentionShape& shape,
                        const AttentionDropout& drop, const Workspace& workspace, cudaStream_t stream);

}  // namespace tandem::kernels::cuda
