// CPU reference scaled-dot-product attention (fp32) with causal masking, grouped-query
// attention (GQA: kv_heads divides heads) and optional attention dropout. The per-head matmuls
// (QKᵀ, PV and the four backward products) go through BLAS with strided leading dimensions
// straight on the packed qkv tensor, so nothing is transposed or copied into head-major form.
//
// Tensor conventions (strategies/ops.hpp):
//   qkv      [b, s, (heads + 2·kv_heads)·d], each token row holding Q (heads·d) | K (kv_heads·d)
//            | V (kv_heads·d), heads consecutive within each part.
//   out      context [b, s, heads·d].
//   lse      [b, heads, s] fp32 logsumexp of each scaled score row (what a fused "flash" kernel
//            keeps for backward).
//   probs    [b, heads, s, s] softmax probabilities BEFORE dropout (masked entries 0); with
//            context parallelism [b, heads, s, cp·s], as are mask and dropped.
//   mask     [b, heads, s, s] bytes (1 kept, 0 dropped), see elementwise.hpp for the RNG: the
//            index of element (b, h, i, j) is ((b·heads + h)·s + i)·s + j.
//   dropped  [b, heads, s, s] probs after dropout (probs·mask/(1-p)), the matrix multiplied by V.
// Query head h reads K/V head h / (heads / kv_heads): consecutive query heads share a group, as
// in Megatron-LM's num_query_groups. Scores are scaled by 1/√d. With `causal`, query i attends to
// keys j ≤ i only.
//
// Forward and backward compute exact (unfused, non-tiled) math in both modes; "flash" only
// changes what is saved: the lse (probs recomputed in backward as exp(scale·QKᵀ - lse)) instead
// of the s×s probabilities, and dropout masks regenerated from the key instead of stored.
#pragma once

#include <cstdint>

namespace tandem::kernels::cpu {

// Context parallelism (strategies/op.hpp, AttentionArgs): with cp_size > 1 the `seq` query rows
// are member cp_rank's two zigzag chunks, K and V come from a separate tensor
//   kv       [b, cp_size·seq, 2·kv_heads·d] (K | V), the whole sequence in member order,
// causal masking compares sequence positions (zigzag_position), and the dropout mask of score
// (i, j) is drawn at the index of its positions in the whole sequence's [s, s] matrix, so a
// context-parallel run drops what one rank would.
struct AttentionShape {
  std::int64_t batch = 0, heads = 0, kv_heads = 0, seq = 0, head_dim = 0;
  bool causal = true;
  int cp_size = 1, cp_rank = 0;
};

struct AttentionDropout {
  float p = 0.0f;          // 0: no dropout
  std::uint64_t key = 0;   // dropout_key(seed, stem, iteration)
};

// Writes out (required) and each of lse, probs, mask, dropped that is not null. When drop.p > 0
// the mask is drawn from drop.key (and stored when `mask` is not null).
// Throws std::invalid_argument for an inconsistent shape (kv_heads not dividing heads, …).
void attention_forward(float* out, float* lse, float* probs, std::uint8_t* mask, float* dropped,
                       const float* qkv, const AttentionShape& shape,
                       const AttentionDropout& drop = {}, const float* kv = nullptr);

// d_qkv (OVERWRITTEN, same layout as qkv) from d_out [b, s, heads·d]. The probabilities come
// from `probs` when not null, else they are recomputed from qkv and `lse` (one of the two is
// required). The dropout mask comes from `mask` when not null, else it is regenerated from
// drop.key when drop.p > 0. K/V gradients of a group sum over its query heads. With a separate
// `kv` (context parallelism) their gradient goes to d_kv (OVERWRITTEN, kv's layout) and the K/V
// columns of d_qkv are left 0.
void attention_backward(float* d_qkv, const float* d_out, const float* qkv, const float* lse,
                        const float* probs, const std::uint8_t* mask, const AttentionShape& shape,
                        const AttentionDropout& drop = {}, const float* kv = nullptr,
                        float* d_kv = nullptr);

}  // namespace tandem::kernels::cpu
