// CUDA softmax cross-entropy (fp32), the contract of kernels/cpu/cross_entropy.hpp: forward
// writes softmax (nullable) and stats[t] = {loss_t, lse_t} (nullable); a negative label is an
// ignored token (loss 0, gradient row 0); a label outside [vocab_offset, vocab_offset + vocab) is
// another shard's. Backward OVERWRITES d_logits = (softmax − onehot)·grad_scale. One block per
// token row.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace tandem::kernels::cuda {

void cross_entropy_forward(float* softmax, float* stats, const float* logits, const std::int32_t* labels,
                           std::int64_t tokens, std::int64_t vocab, std::int64_t vocab_offset, cudaStream_t stream);
void cross_entropy_backward(float* d_logits, const float* softmax, const std::int32_t* labels, std::int64_t tokens,
                            std::int64_t vocab, float grad_scale, std::int64_t vocab_offset, cudaStream_t stream);

}  // namespace tandem::kernels::cuda
