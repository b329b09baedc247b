// CUDA element-wise kernels (fp32 storage): the same math as kernels/cpu/elementwise.hpp, whose
// header states the contract (GELU tanh approximation, SwiGLU gate|up rows, broadcast add and
// its adjoint, inverted dropout with the counter-based SplitMix64 mask, bias add, scale, cast).
// Dropout draws u(key, i) with exactly the CPU's integer arithmetic, so a mask is bit for bit
// the CPU's. Every function enqueues on `stream` and returns at once.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace tandem::kernels::cuda {

void gelu_forward(float* y, const float* x, std::int64_t n, cudaStream_t stream);
void gelu_backward(float* dx, const float* x, const float* dy, std::int64_t n, cudaStream_t stream);
void swiglu_forward(float* y, const float* x, std::int64_t rows, std::int64_t cols, cudaStream_t stream);
void swiglu_backward(float* dx, const float* x, const float* dy, std::int64_t rows, std::int64_t cols,
                     cudaStream_t stream);
// y[i] = a[i] + b[i mod nb]
void add_forward(float* y, const float* a, const float* b, std::int64_t n, std::int64_t nb, cudaStream_t stream);
// db[j] = Σ_{i ≡ j mod nb} dy[i] (overwritten; a copy when nb == n).
void add_backward_broadcast(float* db, const float* dy, std::int64_t n, std::int64_t nb, cudaStream_t stream);
// mask (nullable): 1 byte per element. first_index offsets the RNG counter.
void dropout_forward(float* y, std::uint8_t* mask, const float* x, std::int64_t n, float p, std::uint64_t key,
                     cudaStream_t stream);
void dropout_backward(float* dx, const float* dy, const std::uint8_t* mask, std::int64_t n, float p,
                      cudaStream_t stream);
void dropout_backward_regenerate(float* dx, const float* dy, std::int64_t n, float p, std::uint64_t key,
                                 cudaStream_t stream);
void bias_add_forward(float* y, const float* bias, std::int64_t rows, std::int64_t cols, cudaStream_t stream);
// dbias[c] += Σ_r dy[r, c] (accumulated).
void bias_add_backward(float* dbias, const float* dy, std::int64_t rows, std::int64_t cols, cudaStream_t stream);
// y = alpha·x (alpha == 0 writes zeros even over NaN).
void scale_forward(float* y, const float* x, std::int64_t n, float alpha, cudaStream_t stream);
// out[0] = mean over rows of x[r·stride] (the loss mean over per-token stats).
void strided_mean(float* out, const float* x, std::int64_t rows, std::int64_t stride, cudaStream_t stream);
// Token ids held as float values -> int32 (lround), for token tensors declared with a float dtype.
void float_to_ids(std::int32_t* ids, const float* x, std::int64_t n, cudaStream_t stream);

}  // namespace tandem::kernels::cuda
