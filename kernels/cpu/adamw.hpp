// CPU reference AdamW (fp32) on a flat shard, as PyTorch's torch.optim.AdamW (Loshchilov &
// Hutter: decoupled weight decay), with the gradient pre-scale of strategies/op.hpp:
//   g  = grad · grad_scale                      (1/micro-batches: losses are means, grads sums)
//   m  = β1·m + (1 − β1)·g
//   v  = β2·v + (1 − β2)·g²
//   m̂  = m / (1 − β1^step),  v̂ = v / (1 − β2^step)          (step is 1-based)
//   p  = p − lr·( m̂ / (√v̂ + eps) + weight_decay·p )
// Weight decay applies to every element it is given (which parameters are decayed is the
// caller's choice). The bias corrections are computed in double.
//
// Conventions (ops::adamw): inputs {param, grad, [master], m, v}, outputs {param, [master], m, v}.
// With a master copy the update runs on the fp32 master and the parameter receives a copy of it
// (the "cast" to the low-precision parameter, a plain copy on the fp32 CPU backend).
#pragma once

#include <cstdint>

namespace tandem::kernels::cpu {

struct AdamWConfig {
  float lr = 3e-4f, beta1 = 0.9f, beta2 = 0.95f, eps = 1e-8f, weight_decay = 0.1f;
  float grad_scale = 1.0f;
  std::int64_t step = 1;
};

// master may be null (the parameter is itself fp32). grad is not modified.
// Throws std::invalid_argument when step < 1.
void adamw_update(float* param, float* master, float* m, float* v, const float* grad,
                  std::int64_t n, const AdamWConfig& cfg);

}  // namespace tandem::kernels::cpu
