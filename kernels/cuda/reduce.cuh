// Block-wide reductions shared by the row kernels (norms, softmax, cross-entropy, codecs).
#pragma once

#include <cfloat>

namespace tandem::kernels::cuda {

__device__ __forceinline__ float warp_sum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
// Double sums for the reductions that accumulate in double as their CPU reference does
// (compression.cu: sign scales, Gram-Schmidt norms and dot products).
__device__ __forceinline__ double warp_sum(double v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

template <bool kMax, typename T>
__device__ __forceinline__ T warp_reduce(T v) {
  if constexpr (kMax) return warp_max(v);
  else return warp_sum(v);
}

// Sum (or max, float only) over the block; every thread gets the result. `scratch` holds 32
// values. blockDim.x must be a multiple of 32. The tree is fixed: the same inputs give the same
// bits on every run.
template <bool kMax, typename T>
__device__ __forceinline__ T block_reduce(T v, T* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  v = warp_reduce<kMax>(v);
  __syncthreads();  // scratch may still be read by a previous reduction
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < warps ? scratch[lane] : static_cast<T>(kMax ? -FLT_MAX : 0.0f);
  if (warp == 0) {
    v = warp_reduce<kMax>(v);
    if (lane == 0) scratch[0] = v;
  }
  __syncthreads();
  return scratch[0];
}
__device__ __forceinline__ float block_sum(float v, float* scratch) { return block_reduce<false>(v, scratch); }
__device__ __forceinline__ double block_sum(double v, double* scratch) { return block_reduce<false>(v, scratch); }
__device__ __forceinline__ float block_max(float v, float* scratch) { return block_reduce<true>(v, scratch); }

}  // namespace tandem::kernels::cuda
