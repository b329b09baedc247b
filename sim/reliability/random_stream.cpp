#include "sim/reliability/random_stream.hpp"

#include <cmath>
#include <numbers>
#include <stdexcept>

namespace tandem::sim::reliability {

double RandomStream::uniform_open() {
  constexpr double kStep = 1.0 / 9007199254740992.0;  // 2^-53
  return (static_cast<double>(engine_() >> 11) + 0.5) * kStep;
}

double RandomStream::exponential(double rate_per_s) {
  if (!(rate_per_s > 0)) throw std::invalid_argument("an exponential needs a positive rate");
  return -std::log(uniform_open()) / rate_per_s;
}

double RandomStream::standard_normal() {
  const double u1 = uniform_open();
  const double u2 = uniform_open();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

std::uint64_t RandomStream::below(std::uint64_t n) {
  if (n == 0) throw std::invalid_argument("below(0) has no value");
  return engine_() % n;
}

std::uint64_t RandomStream::derive(std::uint64_t seed, std::uint64_t k) {
  std::uint64_t z = seed + 0x9E3779B97F4A7C15ULL * (k + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

}  // namespace tandem::sim::reliability
