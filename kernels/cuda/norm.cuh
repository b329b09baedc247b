// CUDA LayerNorm / RMSNorm over the last dimension of [rows, cols] (fp32 storage, fp32 math):
// the contract of kernels/cpu/norm.hpp (eps 1e-5 inside the root; the backward recomputes the
// row statistics from x; dx overwritten, dweight/dbias ACCUMULATED). One block per row; the
// parameter gradients are summed over rows with atomics (order-dependent in the last bits).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace tandem::kernels::cuda {

// bias may be null; `centered` selects LayerNorm (true) or RMSNorm (false).
void norm_forward(bool centered, float* y, const float* x, const float* weight, const float* bias,
                  std::int64_t rows, std::int64_t cols, cudaStream_t stream);
// dweight / dbias may be null.
void norm_backward(bool centered, float* dx, float* dweight, float* dbias, const float* dy, const float* x,
                   const float* weight, std::int64_t rows, std::int64_t cols, cudaStream_t stream);

}  // namespace tandem::kernels::cuda
