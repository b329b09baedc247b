#include "kernels/cpu/adamw.hpp"

#include <cmath>
#include <stdexcept>

namespace tandem::kernels::cpu {

void adamw_update(float* param, float* master, float* m, float* v, const float* grad,
                  std::int64_t n, const AdamWConfig& cfg) {
  if (cfg.step < 1) throw std::invalid_argument("adamw: step is 1-based");
  const double step = static_cast<double>(cfg.step);
  const float bc1 = static_cast<float>(1.0 - std::pow(static_cast<double>(cfg.beta1), step));
  const float bc2 = static_cast<float>(1.0 - std::pow(static_cast<double>(cfg.beta2), step));
  float* w = master ? master : param;
  for (std::int64_t i = 0; i < n; ++i) {
    const float g = grad[i] * cfg.grad_scale;
    m[i] = cfg.beta1 * m[i] + (1.0f - cfg.beta1) * g;
    v[i] = cfg.beta2 * v[i] + (1.0f - cfg.beta2) * g * g;
    const float m_hat = m[i] / bc1;
    const float v_hat = v[i] / bc2;
    w[i] -= cfg.lr * (m_hat / (std::sqrt(v_hat) + cfg.eps) + cfg.weight_decay * w[i]);
    if (master) param[i] = w[i];
  }
}

}  // namespace tandem::kernels::cpu
