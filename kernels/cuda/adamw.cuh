// CUDA fused AdamW (fp32 states), one pass over a flat shard: the contract of
// kernels/cpu/adamw.hpp (gradient pre-scale, bias corrections computed in double on the host,
// decoupled weight decay; with a master copy the update runs on the master and the parameter
// receives a copy of it).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace tandem::kernels::cuda {

struct AdamWStep {
  float lr, beta1, beta2, eps, weight_decay, grad_scale;
  float bias_correction1, bias_correction2;  // 1 − β^step
};

// master may be null. Throws std::invalid_argument when step < 1.
AdamWStep adamw_step(float lr, float beta1, float beta2, float eps, float weight_decay, float grad_scale,
                     std::int64_t step);
void adamw_update(float* param, float* master, float* m, float* v, const float* grad, std::int64_t n,
                  const AdamWStep& step, cudaStream_t stream);

}  // namespace tandem::kernels::cuda
