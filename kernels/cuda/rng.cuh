// The dropout RNG on the device (kernels/dropout_rng.hpp, the CPU kernels' very definition), and
// launch helpers shared by the kernels.
#pragma once

#include <cstdint>

#include "kernels/dropout_rng.hpp"

namespace tandem::kernels::cuda {

using kernels::dropout_keep;

// Grid-stride loop bounds for 1-D kernels.
inline unsigned blocks_for(std::int64_t n, int threads = 256) {
  const std::int64_t b = (n + threads - 1) / threads;
  return static_cast<unsigned>(b < 1 ? 1 : (b > 65535 * 8 ? 65535 * 8 : b));
}

}  // namespace tandem::kernels::cuda
