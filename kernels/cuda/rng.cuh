// The dropout RNG on the device (kernels/dropout_rng.hpp, the CPU kernels' very definition), and
// launch helpers shared by the kernels.
#pragma once

#include <cstdint>

#include "kernels/dropout_rng.hpp"

namespace tandem::kernels::cuda {

using kernels::dropout_keep;

// A grid-stride loop of the 64-bit index `i` over [0, n) (1-D kernels).
#define TANDEM_GRID_LOOP(i, n)                                                                    \
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < (n); \
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)

// Grid-stride loop bounds for 1-D kernels.
inline unsigned blocks_for(std::int64_t n, int threads = 256) {
  const std::int64_t b = (n + threads - 1) / threads;
  return static_cast<unsigned>(b < 1 ? 1 : (b > 65535 * 8 ? 65535 * 8 : b));
}

}  // namespace tandem::kernels::cuda
