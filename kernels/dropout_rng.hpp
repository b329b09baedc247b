// The dropout RNG, one definition for every backend (kernels/cpu/elementwise.hpp describes the
// scheme): u(key, i) = (splitmix64(key + (i + 1)·golden) >> 40)·2⁻²⁴, kept iff u >= p. Compiled
// for the host by the CPU kernels and for the device as well by the CUDA ones, so that a mask is
// the same integers, bit for bit, wherever it is drawn.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define TANDEM_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define TANDEM_HOST_DEVICE inline
#endif

namespace tandem::kernels {

inline constexpr std::uint64_t kGolden = 0x9E3779B97F4A7C15ull;  // 2⁶⁴ / φ, SplitMix64's increment

TANDEM_HOST_DEVICE std::uint64_t splitmix64(std::uint64_t z) {
  z ^= z >> 30;
  z *= 0xBF58476D1CE4E5B9ull;
  z ^= z >> 27;
  z *= 0x94D049BB133111EBull;
  z ^= z >> 31;
  return z;
}

// u(key, i) in [0, 1), a multiple of 2⁻²⁴.
TANDEM_HOST_DEVICE float dropout_uniform(std::uint64_t key, std::uint64_t index) {
  const std::uint64_t z = splitmix64(key + (index + 1) * kGolden);
  return static_cast<float>(z >> 40) * (1.0f / 16777216.0f);
}

TANDEM_HOST_DEVICE bool dropout_keep(std::uint64_t key, std::uint64_t index, float p) {
  return dropout_uniform(key, index) >= p;
}

}  // namespace tandem::kernels
