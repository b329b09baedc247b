#include "kernels/cpu/compression_topk.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

namespace tandem::kernels::cpu {

void top_k_select(std::int32_t* indices, float* values, const float* x, std::int64_t n, std::int64_t k,
                  float* residual) {
  if (k < 0 || k > n) throw std::invalid_argument("top_k_select: k " + std::to_string(k) + " outside [0, " +
                                                  std::to_string(n) + "]");
  std::vector<std::int32_t> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  const auto larger = [x](std::int32_t a, std::int32_t b) {
    const float fa = std::abs(x[a]), fb = std::abs(x[b]);
    return fa > fb || (fa == fb && a < b);
  };
  std::nth_element(order.begin(), order.begin() + k, order.end(), larger);
  std::sort(order.begin(), order.begin() + k);
  for (std::int64_t j = 0; j < k; ++j) {
    const std::int32_t i = order[static_cast<std::size_t>(j)];
    indices[j] = i;
    values[j] = x[i];
  }
  if (residual)
    for (std::int64_t j = 0; j < k; ++j) residual[indices[j]] = 0.0f;
}

void scatter_add(float* y, std::int64_t n, const std::int32_t* indices, const float* values, std::int64_t k) {
  for (std::int64_t j = 0; j < k; ++j) {
    if (indices[j] < 0 || indices[j] >= n)
      throw std::out_of_range("scatter_add: index " + std::to_string(indices[j]) + " outside [0, " +
                              std::to_string(n) + ")");
    y[indices[j]] += values[j];
  }
}

}  // namespace tandem::kernels::cpu
