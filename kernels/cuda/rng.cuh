// The dropout RNG of kernels/cpu/elementwise.hpp on the device: u(key, i) =
// (splitmix64(key + (i + 1)·golden) >> 40)·2⁻²⁴, the same integers as the CPU, so masks agree bit
// for bit on every backend.
#pragma once

#include <cstdint>

namespace tandem::kernels::cuda {

__device__ __forceinline__ std::uint64_t splitmix64(std::uint64_t z) {
  z ^= z >> 30;
  z *= 0xBF58476D1CE4E5B9ull;
  z ^= z >> 27;
  z *= 0x94D049BB133111EBull;
  z ^= z >> 31;
  return z;
}

__device__ __forceinline__ bool dropout_keep(std::uint64_t key, std::uint64_t index, float p) {
  const std::uint64_t z = splitmix64(key + (index + 1) * 0x9E3779B97F4A7C15ull);
  return static_cast<float>(z >> 40) * (1.0f / 16777216.0f) >= p;
}

// Grid-stride loop bounds for 1-D kernels.
inline unsigned blocks_for(std::int64_t n, int threads = 256) {
  const std::int64_t b = (n + threads - 1) / threads;
  return static_cast<unsigned>(b < 1 ? 1 : (b > 65535 * 8 ? 65535 * 8 : b));
}

}  // namespace tandem::kernels::cuda
