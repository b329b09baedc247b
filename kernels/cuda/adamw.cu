#include "kernels/cuda/adamw.cuh"

#include <cmath>
#include <stdexcept>

#include "kernels/cuda/check.hpp"
#include "kernels/cuda/rng.cuh"

namespace tandem::kernels::cuda {
namespace {

__global__ void adamw_kernel(float* param, float* master, float* m, float* v, const float* grad, std::int64_t n,
                             AdamWStep s) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const float g = grad[i] * s.grad_scale;
    const float mi = s.beta1 * m[i] + (1.0f - s.beta1) * g;
    const float vi = s.beta2 * v[i] + (1.0f - s.beta2) * g * g;
    m[i] = mi;
    v[i] = vi;
    float* w = master ? master : param;
    const float wi = w[i];
    const float updated = wi - s.lr * ((mi / s.bias_correction1) / (sqrtf(vi / s.bias_correction2) + s.eps) +
                                       s.weight_decay * wi);
    w[i] = updated;
    if (master) param[i] = updated;
  }
}

}  // namespace

AdamWStep adamw_step(float lr, float beta1, float beta2, float eps, float weight_decay, float grad_scale,
                     std::int64_t step) {
  if (step < 1) throw std::invalid_argument("adamw: step is 1-based");
  const double k = static_cast<double>(step);
  return AdamWStep{lr, beta1, beta2, eps, weight_decay, grad_scale,
                   static_cast<float>(1.0 - std::pow(static_cast<double>(beta1), k)),
                   static_cast<float>(1.0 - std::pow(static_cast<double>(beta2), k))};
}

void adamw_update(float* param, float* master, float* m, float* v, const float* grad, std::int64_t n,
                  const AdamWStep& step, cudaStream_t stream) {
  if (n <= 0) return;
  adamw_kernel<<<blocks_for(n), 256, 0, stream>>>(param, master, m, v, grad, n, step);
  CUDA_CHECK_LAUNCH();
}

}  // namespace tandem::kernels::cuda
