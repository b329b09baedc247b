#include "strategies/parameter_server_order.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <random>
#include <stdexcept>
#include <tuple>

namespace tandem {

namespace {

// A standard normal draw by Box-Muller from the engine's raw bits: std::normal_distribution's
// algorithm is the library's choice, and the order must be the same on every build.
double standard_normal(std::mt19937_64& engine) {
  constexpr double kScale = 1.0 / 9007199254740992.0;  // 2^-53
  const double u1 = (static_cast<double>(engine() >> 11) + 1.0) * kScale;  // (0, 1]
  const double u2 = static_cast<double>(engine() >> 11) * kScale;          // [0, 1)
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

}  // namespace

std::vector<int> asynchronous_push_order(const std::vector<double>& step_s, int steps, double jitter,
                                         std::uint64_t seed) {
  if (step_s.empty()) throw std::invalid_argument("asynchronous push order: no workers");
  for (double s : step_s)
    if (!(s > 0) || !std::isfinite(s)) throw std::invalid_argument("asynchronous push order: a step time is not positive");
  if (!(jitter >= 0) || !std::isfinite(jitter)) throw std::invalid_argument("asynchronous push order: bad jitter");
  // Each push's arrival (seconds, worker); the draws go worker by worker, step by step, so that
  // one worker's arrivals do not depend on how many steps the others make.
  std::vector<std::tuple<double, int>> arrivals;
  arrivals.reserve(step_s.size() * static_cast<std::size_t>(std::max(steps, 0)));
  std::mt19937_64 engine(seed);
  for (std::size_t w = 0; w < step_s.size(); ++w) {
    double t = 0;
    for (int k = 0; k < steps; ++k) {
      // Log-normal with mean 1: exp(jitter z - jitter^2 / 2).
      const double factor = jitter > 0 ? std::exp(jitter * standard_normal(engine) - jitter * jitter / 2) : 1.0;
      t += step_s[w] * factor;
      arrivals.emplace_back(t, static_cast<int>(w));
    }
  }
  std::sort(arrivals.begin(), arrivals.end());
  std::vector<int> order;
  order.reserve(arrivals.size());
  for (const auto& [t, w] : arrivals) order.push_back(w);
  return order;
}

}  // namespace tandem
