// The random numbers of the reliability Monte Carlo, identical bit for bit on every platform:
// std::mt19937_64 is specified by the standard, its distributions are not (libstdc++ and libc++
// draw differently), so each distribution used here is written out from 64-bit words.
#pragma once

#include <cstdint>
#include <random>

namespace tandem::sim::reliability {

class RandomStream {
 public:
  explicit RandomStream(std::uint64_t seed) : engine_(seed) {}

  // Uniform in (0, 1): the top 53 bits of one word, offset by half a step so that 0 never comes
  // out (a logarithm of it would be -inf).
  double uniform_open();
  // Exponential with the given rate (events per second): inverse transform of one uniform.
  double exponential(double rate_per_s);
  // Standard normal: Box-Muller on two uniforms (the cosine branch only, so every call consumes
  // exactly two words and streams stay aligned whatever is drawn).
  double standard_normal();
  // An integer in [0, n): Lemire's multiply-shift would be faster; the modulo's bias is below
  // n / 2^64, far under anything a Monte Carlo of this size can see.
  std::uint64_t below(std::uint64_t n);

  // A seed for the k-th sub-stream of `seed` (trials, sweeps): SplitMix64's finaliser, so that
  // neighbouring k give unrelated streams.
  static std::uint64_t derive(std::uint64_t seed, std::uint64_t k);

 private:
  std::mt19937_64 engine_;
};

}  // namespace tandem::sim::reliability
