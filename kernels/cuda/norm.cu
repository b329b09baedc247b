#include "kernels/cuda/norm.cuh"

#include "kernels/cuda/check.hpp"
#include "kernels/cuda/reduce.cuh"

namespace tandem::kernels::cuda {
namespace {

using I64 = std::int64_t;
constexpr float kEps = 1e-5f;  // kernels/cpu/norm.hpp: kNormEps
constexpr int kThreads = 256;

struct Stats {
  float mean, rstd;
};

// Two passes over the row (mean, then centred squares): no cancellation for rows with a large
// mean, as the CPU reference.
__device__ Stats row_stats(bool centered, const float* x, I64 cols, float* scratch) {
  float mean = 0.0f;
  if (centered) {
    float s = 0.0f;
    for (I64 c = threadIdx.x; c < cols; c += blockDim.x) s += x[c];
    mean = block_sum(s, scratch) / static_cast<float>(cols);
  }
  float q = 0.0f;
  for (I64 c = threadIdx.x; c < cols; c += blockDim.x) {
    const float d = x[c] - mean;
    q += d * d;
  }
  const float var = block_sum(q, scratch) / static_cast<float>(cols);
  return {mean, rsqrtf(var + kEps)};
}

__global__ void norm_fwd(bool centered, float* y, const float* x, const float* w, const float* b, I64 cols) {
  __shared__ float scratch[32];
  const I64 r = blockIdx.x;
  const float* xr = x + r * cols;
  float* yr = y + r * cols;
  const Stats st = row_stats(centered, xr, cols, scratch);
  for (I64 c = threadIdx.x; c < cols; c += blockDim.x) {
    const float v = (xr[c] - st.mean) * st.rstd * w[c];
    yr[c] = b ? v + b[c] : v;
  }
}

// dx = rstd·(g − mean(g) − xhat·mean(g·xhat)) with g = dy·w (mean(g) dropped for RMSNorm).
__global__ void norm_bwd(bool centered, float* dx, float* dw, float* db, const float* dy, const float* x,
                         const float* w, I64 cols) {
  __shared__ float scratch[32];
  const I64 r = blockIdx.x;
  const float* xr = x + r * cols;
  const float* dyr = dy + r * cols;
  float* dxr = dx + r * cols;
  const Stats st = row_stats(centered, xr, cols, scratch);
  float gs = 0.0f, gxs = 0.0f;
  for (I64 c = threadIdx.x; c < cols; c += blockDim.x) {
    const float xhat = (xr[c] - st.mean) * st.rstd;
    const float g = dyr[c] * w[c];
    gs += g;
    gxs += g * xhat;
    if (dw) atomicAdd(dw + c, dyr[c] * xhat);
    if (db) atomicAdd(db + c, dyr[c]);
  }
  const float g_mean = centered ? block_sum(gs, scratch) / static_cast<float>(cols) : 0.0f;
  const float gx_mean = block_sum(gxs, scratch) / static_cast<float>(cols);
  for (I64 c = threadIdx.x; c < cols; c += blockDim.x) {
    const float xhat = (xr[c] - st.mean) * st.rstd;
    dxr[c] = st.rstd * (dyr[c] * w[c] - g_mean - xhat * gx_mean);
  }
}

}  // namespace

void norm_forward(bool centered, float* y, const float* x, const float* weight, const float* bias, I64 rows,
                  I64 cols, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  norm_fwd<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(centered, y, x, weight, bias, cols);
  CUDA_CHECK_LAUNCH();
}

void norm_backward(bool centered, float* dx, float* dweight, float* dbias, const float* dy, const float* x,
                   const float* weight, I64 rows, I64 cols, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  norm_bwd<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(centered, dx, dweight, dbias, dy, x, weight,
                                                                  cols);
  CUDA_CHECK_LAUNCH();
}

}  // namespace tandem::kernels::cuda
