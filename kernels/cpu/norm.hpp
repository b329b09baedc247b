// CPU reference normalizations (fp32): LayerNorm and RMSNorm over the last dimension of a
// [rows, cols] tensor, forward and backward. Row statistics are accumulated in double (a
// reference should not lose digits to a long row), then applied in float.
//
// Conventions (strategies/ops.hpp): forward inputs {x, weight[, bias]} outputs {y}; backward
// inputs {x, dy, weight} outputs {dx, dweight[, dbias]}. The backward recomputes the row
// statistics from x (the models save x, not mean/rstd); dx is OVERWRITTEN, dweight and dbias
// are parameter gradients and ACCUMULATE. eps = 1e-5 for both (Megatron-LM's
// layernorm_epsilon default), inside the square root.
//   LayerNorm  y = (x − mean)·rstd·w + b,   rstd = 1/√(var + eps), var the biased variance
//   RMSNorm    y = x·rstd·w (+ b),          rstd = 1/√(mean(x²) + eps)
#pragma once

#include <cstdint>

namespace tandem::kernels::cpu {

inline constexpr float kNormEps = 1e-5f;

// mean / rstd [rows] receive the statistics when not null; bias may be null.
void layernorm_forward(float* y, float* mean, float* rstd, const float* x, const float* weight,
                       const float* bias, std::int64_t rows, std::int64_t cols,
                       float eps = kNormEps);
// dweight / dbias may be null (no parameter gradients).
void layernorm_backward(float* dx, float* dweight, float* dbias, const float* dy, const float* x,
                        const float* weight, std::int64_t rows, std::int64_t cols,
                        float eps = kNormEps);

// rstd [rows] receives 1/rms when not null; bias may be null (Llama has none).
void rmsnorm_forward(float* y, float* rstd, const float* x, const float* weight,
                     const float* bias, std::int64_t rows, std::int64_t cols,
                     float eps = kNormEps);
void rmsnorm_backward(float* dx, float* dweight, float* dbias, const float* dy, const float* x,
                      const float* weight, std::int64_t rows, std::int64_t cols,
                      float eps = kNormEps);

}  // namespace tandem::kernels::cpu
