// FP8 rounding, as an FP8 GEMM sees its operands (OCP 8-bit floating point, the formats of
// Hopper's tensor cores): the tensor is scaled so that its largest magnitude lands on the format's
// largest finite value (per-tensor "current" scaling; Transformer Engine's delayed scaling uses the
// amax of earlier iterations, which differs only while amax moves), each element is rounded to the
// nearest representable value (ties to even, subnormals kept, saturating at the maximum) and scaled
// back. The CPU backend computes the GEMM on the rounded values, so FP8's effect on convergence is
// measured, not assumed.
#pragma once

#include <cstdint>

#include "strategies/op.hpp"

namespace tandem::kernels::cpu {

// The largest finite value of `format`: 448 (E4M3), 57344 (E5M2).
float fp8_max(Fp8Format format);

// `x` rounded to the nearest value of `format` (no scaling), saturating at +-fp8_max.
float round_to_fp8(float x, Fp8Format format);

// Rounds data[0..n) in place as an FP8 operand with a per-tensor scale (a no-op for none, and for
// an all-zero tensor).
void quantize_fp8(float* data, std::int64_t n, Fp8Format format);

}  // namespace tandem::kernels::cpu
