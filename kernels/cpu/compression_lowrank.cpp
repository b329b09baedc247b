#include "kernels/cpu/compression_lowrank.hpp"

#include <cmath>
#include <numbers>

#include "kernels/dropout_rng.hpp"

namespace tandem::kernels::cpu {

void orthogonalize_columns(float* p, std::int64_t rows, std::int64_t cols) {
  constexpr double kEpsilon = 1e-8;  // PyTorch powerSGD_hook's default epsilon
  for (std::int64_t j = 0; j < cols; ++j) {
    double norm_sq = 0.0;
    for (std::int64_t r = 0; r < rows; ++r) norm_sq += static_cast<double>(p[r * cols + j]) * p[r * cols + j];
    const double inv = 1.0 / (std::sqrt(norm_sq) + kEpsilon);
    for (std::int64_t r = 0; r < rows; ++r) p[r * cols + j] = static_cast<float>(p[r * cols + j] * inv);
    for (std::int64_t later = j + 1; later < cols; ++later) {
      double dot = 0.0;
      for (std::int64_t r = 0; r < rows; ++r) dot += static_cast<double>(p[r * cols + j]) * p[r * cols + later];
      for (std::int64_t r = 0; r < rows; ++r)
        p[r * cols + later] = static_cast<float>(p[r * cols + later] - dot * p[r * cols + j]);
    }
  }
}

void gaussian_fill(float* q, std::int64_t n, std::uint64_t seed) {
  // Two uniforms in (0, 1] per pair of outputs (53-bit mantissas; 1 - u avoids log(0)).
  const auto uniform = [seed](std::uint64_t i) {
    return 1.0 - static_cast<double>(splitmix64(seed + (i + 1) * kGolden) >> 11) * 0x1.0p-53;
  };
  for (std::int64_t i = 0; i < n; i += 2) {
    const auto pair = static_cast<std::uint64_t>(i);
    const double radius = std::sqrt(-2.0 * std::log(uniform(2 * pair)));
    const double angle = 2.0 * std::numbers::pi * uniform(2 * pair + 1);
    q[i] = static_cast<float>(radius * std::cos(angle));
    if (i + 1 < n) q[i + 1] = static_cast<float>(radius * std::sin(angle));
  }
}

}  // namespace tandem::kernels::cpu
