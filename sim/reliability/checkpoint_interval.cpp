#include "sim/reliability/checkpoint_interval.hpp"

#include <cmath>

namespace tandem::sim::reliability {

Seconds young_interval_s(Seconds checkpoint_s, Seconds mtbf_s) { return std::sqrt(2 * checkpoint_s * mtbf_s); }

Seconds daly_interval_s(Seconds checkpoint_s, Seconds mtbf_s) {
  if (checkpoint_s >= 2 * mtbf_s) return mtbf_s;
  const double x = checkpoint_s / (2 * mtbf_s);
  return std::sqrt(2 * checkpoint_s * mtbf_s) * (1 + std::sqrt(x) / 3 + x / 9) - checkpoint_s;
}

double daly_goodput(Seconds interval_s, Seconds checkpoint_s, Seconds restart_s, Seconds mtbf_s) {
  const double segment_s = mtbf_s * std::exp(restart_s / mtbf_s) * std::expm1((interval_s + checkpoint_s) / mtbf_s);
  return interval_s / segment_s;
}

}  // namespace tandem::sim::reliability
