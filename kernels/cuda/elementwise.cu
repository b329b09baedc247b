#include "kernels/cuda/elementwise.cuh"

#include "kernels/cuda/check.hpp"
#include "kernels/cuda/reduce.cuh"
#include "kernels/cuda/rng.cuh"

namespace tandem::kernels::cuda {
namespace {

using I64 = std::int64_t;
constexpr int kThreads = 256;
constexpr float kGeluScale = 0.7978845608028654f;  // √(2/π)
constexpr float kGeluCubic = 0.044715f;

__device__ __forceinline__ float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

__global__ void gelu_fwd(float* y, const float* x, I64 n) {
  TANDEM_GRID_LOOP(i, n) {
    const float v = x[i];
    y[i] = 0.5f * v * (1.0f + tanhf(kGeluScale * (v + kGeluCubic * v * v * v)));
  }
}
__global__ void gelu_bwd(float* dx, const float* x, const float* dy, I64 n) {
  TANDEM_GRID_LOOP(i, n) {
    const float v = x[i];
    const float t = tanhf(kGeluScale * (v + kGeluCubic * v * v * v));
    const float local = 0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * kGeluScale * (1.0f + 3.0f * kGeluCubic * v * v);
    dx[i] = dy[i] * local;
  }
}
__global__ void swiglu_fwd(float* y, const float* x, I64 rows, I64 cols) {
  TANDEM_GRID_LOOP(i, rows * cols) {
    const I64 r = i / cols, c = i - r * cols;
    const float g = x[r * 2 * cols + c], u = x[r * 2 * cols + cols + c];
    y[i] = g * sigmoid(g) * u;
  }
}
__global__ void swiglu_bwd(float* dx, const float* x, const float* dy, I64 rows, I64 cols) {
  TANDEM_GRID_LOOP(i, rows * cols) {
    const I64 r = i / cols, c = i - r * cols;
    const float g = x[r * 2 * cols + c], u = x[r * 2 * cols + cols + c];
    const float s = sigmoid(g), d = dy[i];
    dx[r * 2 * cols + c] = d * u * s * (1.0f + g * (1.0f - s));
    dx[r * 2 * cols + cols + c] = d * g * s;
  }
}
__global__ void add_fwd(float* y, const float* a, const float* b, I64 n, I64 nb) {
  TANDEM_GRID_LOOP(i, n) y[i] = a[i] + b[nb == n ? i : i % nb];
}
// Column sums of dy viewed as [n/nb, nb], one thread per column and a slice of rows; atomics
// join the slices (db zeroed before, or accumulated into for the bias gradient).
__global__ void column_sums(float* out, const float* dy, I64 rows, I64 cols, I64 rows_per_slice) {
  const I64 c = blockIdx.x * static_cast<I64>(blockDim.x) + threadIdx.x;
  if (c >= cols) return;
  const I64 r0 = blockIdx.y * rows_per_slice;
  const I64 r1 = min(rows, r0 + rows_per_slice);
  float s = 0.0f;
  for (I64 r = r0; r < r1; ++r) s += dy[r * cols + c];
  atomicAdd(out + c, s);
}
__global__ void dropout_fwd(float* y, std::uint8_t* mask, const float* x, I64 n, float p, std::uint64_t key) {
  const float scale = 1.0f / (1.0f - p);
  TANDEM_GRID_LOOP(i, n) {
    const bool keep = dropout_keep(key, static_cast<std::uint64_t>(i), p);
    if (mask) mask[i] = keep ? 1 : 0;
    y[i] = keep ? x[i] * scale : 0.0f;
  }
}
__global__ void dropout_bwd(float* dx, const float* dy, const std::uint8_t* mask, I64 n, float p) {
  const float scale = 1.0f / (1.0f - p);
  TANDEM_GRID_LOOP(i, n) dx[i] = mask[i] ? dy[i] * scale : 0.0f;
}
__global__ void dropout_bwd_regen(float* dx, const float* dy, I64 n, float p, std::uint64_t key) {
  const float scale = 1.0f / (1.0f - p);
  TANDEM_GRID_LOOP(i, n) dx[i] = dropout_keep(key, static_cast<std::uint64_t>(i), p) ? dy[i] * scale : 0.0f;
}
__global__ void bias_add_fwd(float* y, const float* bias, I64 rows, I64 cols) {
  TANDEM_GRID_LOOP(i, rows * cols) y[i] += bias[i % cols];
}
__global__ void scale_fwd(float* y, const float* x, I64 n, float alpha) {
  TANDEM_GRID_LOOP(i, n) y[i] = alpha == 0.0f ? 0.0f : alpha * x[i];
}
__global__ void strided_mean_kernel(float* out, const float* x, I64 rows, I64 stride) {
  __shared__ float scratch[32];
  float s = 0.0f;
  for (I64 r = threadIdx.x; r < rows; r += blockDim.x) s += x[r * stride];
  s = block_sum(s, scratch);
  if (threadIdx.x == 0) out[0] = rows > 0 ? s / static_cast<float>(rows) : 0.0f;
}
__global__ void float_to_ids_kernel(std::int32_t* ids, const float* x, I64 n) {
  TANDEM_GRID_LOOP(i, n) ids[i] = static_cast<std::int32_t>(lroundf(x[i]));
}

void sum_columns(float* out, const float* dy, I64 rows, I64 cols, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return;
  const I64 slice = 256;  // rows per block: enough blocks to fill the GPU for any shape
  const dim3 grid(static_cast<unsigned>((cols + kThreads - 1) / kThreads),
                  static_cast<unsigned>((rows + slice - 1) / slice));
  column_sums<<<grid, kThreads, 0, stream>>>(out, dy, rows, cols, slice);
  CUDA_CHECK_LAUNCH();
}

}  // namespace

#define TANDEM_LAUNCH(kernel, n, ...)                                            \
  do {                                                                           \
    if ((n) <= 0) return;                                                        \
    kernel<<<blocks_for(n, kThreads), kThreads, 0, stream>>>(__VA_ARGS__);      \
    CUDA_CHECK_LAUNCH();                                                         \
  } while (0)

void gelu_forward(float* y, const float* x, I64 n, cudaStream_t stream) { TANDEM_LAUNCH(gelu_fwd, n, y, x, n); }
void gelu_backward(float* dx, const float* x, const float* dy, I64 n, cudaStream_t stream) {
  TANDEM_LAUNCH(gelu_bwd, n, dx, x, dy, n);
}
void swiglu_forward(float* y, const float* x, I64 rows, I64 cols, cudaStream_t stream) {
  TANDEM_LAUNCH(swiglu_fwd, rows * cols, y, x, rows, cols);
}
void swiglu_backward(float* dx, const float* x, const float* dy, I64 rows, I64 cols, cudaStream_t stream) {
  TANDEM_LAUNCH(swiglu_bwd, rows * cols, dx, x, dy, rows, cols);
}
void add_forward(float* y, const float* a, const float* b, I64 n, I64 nb, cudaStream_t stream) {
  TANDEM_LAUNCH(add_fwd, n, y, a, b, n, nb);
}
void add_backward_broadcast(float* db, const float* dy, I64 n, I64 nb, cudaStream_t stream) {
  if (nb == n) {
    if (db != dy) CUDA_CHECK(cudaMemcpyAsync(db, dy, sizeof(float) * n, cudaMemcpyDeviceToDevice, stream));
    return;
  }
  CUDA_CHECK(cudaMemsetAsync(db, 0, sizeof(float) * nb, stream));
  sum_columns(db, dy, n / nb, nb, stream);
}
void dropout_forward(float* y, std::uint8_t* mask, const float* x, I64 n, float p, std::uint64_t key,
                     cudaStream_t stream) {
  TANDEM_LAUNCH(dropout_fwd, n, y, mask, x, n, p, key);
}
void dropout_backward(float* dx, const float* dy, const std::uint8_t* mask, I64 n, float p, cudaStream_t stream) {
  TANDEM_LAUNCH(dropout_bwd, n, dx, dy, mask, n, p);
}
void dropout_backward_regenerate(float* dx, const float* dy, I64 n, float p, std::uint64_t key,
                                 cudaStream_t stream) {
  TANDEM_LAUNCH(dropout_bwd_regen, n, dx, dy, n, p, key);
}
void bias_add_forward(float* y, const float* bias, I64 rows, I64 cols, cudaStream_t stream) {
  TANDEM_LAUNCH(bias_add_fwd, rows * cols, y, bias, rows, cols);
}
void bias_add_backward(float* dbias, const float* dy, I64 rows, I64 cols, cudaStream_t stream) {
  sum_columns(dbias, dy, rows, cols, stream);
}
void scale_forward(float* y, const float* x, I64 n, float alpha, cudaStream_t stream) {
  TANDEM_LAUNCH(scale_fwd, n, y, x, n, alpha);
}
void strided_mean(float* out, const float* x, I64 rows, I64 stride, cudaStream_t stream) {
  strided_mean_kernel<<<1, 1024, 0, stream>>>(out, x, rows, stride);
  CUDA_CHECK_LAUNCH();
}
void float_to_ids(std::int32_t* ids, const float* x, I64 n, cudaStream_t stream) {
  TANDEM_LAUNCH(float_to_ids_kernel, n, ids, x, n);
}

}  // namespace tandem::kernels::cuda
