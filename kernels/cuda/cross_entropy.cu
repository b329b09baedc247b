#include "kernels/cuda/cross_entropy.cuh"

#include "kernels/cuda/check.hpp"
#include "kernels/cuda/reduce.cuh"

namespace tandem::kernels::cuda {
namespace {

using I64 = std::int64_t;
constexpr int kThreads = 512;

__device__ __forceinline__ bool in_shard(std::int32_t label, I64 vocab, I64 offset) {
  return label >= 0 && label - offset >= 0 && label - offset < vocab;
}

__global__ void ce_fwd(float* softmax, float* stats, const float* logits, const std::int32_t* labels, I64 vocab,
                       I64 offset) {
  __shared__ float scratch[32];
  const I64 t = blockIdx.x;
  const float* z = logits + t * vocab;
  float mx = -FLT_MAX;
  for (I64 j = threadIdx.x; j < vocab; j += blockDim.x) mx = fmaxf(mx, z[j]);
  mx = block_max(mx, scratch);
  float s = 0.0f;
  for (I64 j = threadIdx.x; j < vocab; j += blockDim.x) s += expf(z[j] - mx);
  const float lse = mx + logf(block_sum(s, scratch));
  if (softmax)
    for (I64 j = threadIdx.x; j < vocab; j += blockDim.x) softmax[t * vocab + j] = expf(z[j] - lse);
  if (stats && threadIdx.x == 0) {
    const std::int32_t label = labels[t];
    const float target = in_shard(label, vocab, offset) ? z[label - offset] : 0.0f;
    stats[t * 2] = label < 0 ? 0.0f : lse - target;
    stats[t * 2 + 1] = lse;
  }
}

__global__ void ce_bwd(float* d, const float* p, const std::int32_t* labels, I64 vocab, float scale, I64 offset) {
  const I64 t = blockIdx.x;
  const std::int32_t label = labels[t];
  for (I64 j = threadIdx.x; j < vocab; j += blockDim.x) {
    float v = label < 0 ? 0.0f : p[t * vocab + j] * scale;
    if (label >= 0 && in_shard(label, vocab, offset) && j == label - offset) v -= scale;
    d[t * vocab + j] = v;
  }
}

__global__ void shard_max(float* row_max, const float* logits, I64 vocab) {
  __shared__ float scratch[32];
  const I64 t = blockIdx.x;
  const float* z = logits + t * vocab;
  float mx = -INFINITY;  // an empty row's max, as the CPU's
  for (I64 j = threadIdx.x; j < vocab; j += blockDim.x) mx = fmaxf(mx, z[j]);
  mx = block_max(mx, scratch);
  if (threadIdx.x == 0) row_max[t] = mx;
}

__global__ void shard_sum_exp(float* sums, const float* logits, const std::int32_t* labels, const float* global_max,
                              I64 vocab, I64 offset) {
  __shared__ float scratch[32];
  const I64 t = blockIdx.x;
  const float* z = logits + t * vocab;
  const float mx = global_max[t];
  float s = 0.0f;
  for (I64 j = threadIdx.x; j < vocab; j += blockDim.x) s += expf(z[j] - mx);
  s = block_sum(s, scratch);
  if (threadIdx.x == 0) {
    const std::int32_t label = labels[t];
    sums[t * 2] = s;
    sums[t * 2 + 1] = in_shard(label, vocab, offset) ? z[label - offset] : 0.0f;
  }
}

__global__ void shard_finish(float* softmax, float* stats, const float* logits, const float* global_max,
                             const float* sums, const std::int32_t* labels, I64 vocab) {
  const I64 t = blockIdx.x;
  const float lse = global_max[t] + logf(sums[t * 2]);
  if (softmax)
    for (I64 j = threadIdx.x; j < vocab; j += blockDim.x) softmax[t * vocab + j] = expf(logits[t * vocab + j] - lse);
  if (stats && threadIdx.x == 0) {
    stats[t * 2] = labels[t] < 0 ? 0.0f : lse - sums[t * 2 + 1];
    stats[t * 2 + 1] = lse;
  }
}

}  // namespace

void cross_entropy_forward(float* softmax, float* stats, const float* logits, const std::int32_t* labels,
                           I64 tokens, I64 vocab, I64 vocab_offset, cudaStream_t stream) {
  if (tokens <= 0 || vocab <= 0) return;
  ce_fwd<<<static_cast<unsigned>(tokens), kThreads, 0, stream>>>(softmax, stats, logits, labels, vocab,
                                                                  vocab_offset);
  CUDA_CHECK_LAUNCH();
}

void cross_entropy_backward(float* d_logits, const float* softmax, const std::int32_t* labels, I64 tokens,
                            I64 vocab, float grad_scale, I64 vocab_offset, cudaStream_t stream) {
  if (tokens <= 0 || vocab <= 0) return;
  ce_bwd<<<static_cast<unsigned>(tokens), kThreads, 0, stream>>>(d_logits, softmax, labels, vocab, grad_scale,
                                                                  vocab_offset);
  CUDA_CHECK_LAUNCH();
}

void softmax_shard_max(float* row_max, const float* logits, I64 tokens, I64 vocab, cudaStream_t stream) {
  if (tokens <= 0) return;
  shard_max<<<static_cast<unsigned>(tokens), kThreads, 0, stream>>>(row_max, logits, vocab);
  CUDA_CHECK_LAUNCH();
}

void softmax_shard_sum_exp(float* sums, const float* logits, const std::int32_t* labels, const float* global_max,
                           I64 tokens, I64 vocab, I64 vocab_offset, cudaStream_t stream) {
  if (tokens <= 0) return;
  shard_sum_exp<<<static_cast<unsigned>(tokens), kThreads, 0, stream>>>(sums, logits, labels, global_max, vocab,
                                                                         vocab_offset);
  CUDA_CHECK_LAUNCH();
}

void cross_entropy_shard_finish(float* softmax, float* stats, const float* logits, const float* global_max,
                                const float* sums, const std::int32_t* labels, I64 tokens, I64 vocab,
                                cudaStream_t stream) {
  if (tokens <= 0) return;
  shard_finish<<<static_cast<unsigned>(tokens), kThreads, 0, stream>>>(softmax, stats, logits, global_max, sums,
                                                                        labels, vocab);
  CUDA_CHECK_LAUNCH();
}

}  // namespace tandem::kernels::cuda
