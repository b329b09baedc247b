// CUDA softmax cross-entropy (fp32), the contract of kernels/cpu/cross_entropy.hpp: forward
// writes softmax (nullable) and stats[t] = {loss_t, lse_t} (nullable); a negative label is an
// ignored token (loss 0, gradient row 0); a label outside [vocab_offset, vocab_offset + vocab) is
// another shard's. Backward OVERWRITES d_logits = (softmax − onehot)·grad_scale. One block per
// token row.
//
// Vocab-parallel steps (Megatron-LM's, LossStep in strategies/op.hpp), the same contract as the
// CPU's softmax_shard_max / softmax_shard_sum_exp / cross_entropy_shard_finish: row maxima of
// the shard → (all-reduce max) → {Σ exp(z − global max), label logit or 0} → (all-reduce sum)
// → the shard's globally normalised softmax (nullable) and stats {loss_t, lse_t} (nullable).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace tandem::kernels::cuda {

void cross_entropy_forward(float* softmax, float* stats, const float* logits, const std::int32_t* labels,
                           std::int64_t tokens, std::int64_t vocab, std::int64_t vocab_offset, cudaStream_t stream);
void cross_entropy_backward(float* d_logits, const float* softmax, const std::int32_t* labels, std::int64_t tokens,
                            std::int64_t vocab, float grad_scale, std::int64_t vocab_offset, cudaStream_t stream);

void softmax_shard_max(float* row_max, const float* logits, std::int64_t tokens, std::int64_t vocab,
                       cudaStream_t stream);
void softmax_shard_sum_exp(float* sums, const float* logits, const std::int32_t* labels, const float* global_max,
                           std::int64_t tokens, std::int64_t vocab, std::int64_t vocab_offset, cudaStream_t stream);
void cross_entropy_shard_finish(float* softmax, float* stats, const float* logits, const float* global_max,
                                const float* sums, const std::int32_t* labels, std::int64_t tokens,
                                std::int64_t vocab, cudaStream_t stream);

}  // namespace tandem::kernels::cuda
