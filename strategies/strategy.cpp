#include "strategies/strategy.hpp"

#include <algorithm>
#include <numeric>

namespace tandem {

std::vector<std::int64_t> split_proportionally(std::int64_t total, const std::vector<double>& weights) {
  const std::size_t n = weights.size();
  if (n == 0) throw std::invalid_argument("no replicas to split a batch over");
  if (total < static_cast<std::int64_t>(n))
    throw std::invalid_argument("fewer micro-batches than replicas");
  const double sum = std::accumulate(weights.begin(), weights.end(), 0.0);
  // Every replica gets one micro-batch first; the rest is shared by weight.
  const std::int64_t rest = total - static_cast<std::int64_t>(n);
  std::vector<std::int64_t> shares(n, 1);
  std::vector<std::pair<double, std::size_t>> remainders;
  std::int64_t given = 0;
  for (std::size_t i = 0; i < n; ++i) {
    // Ideal share of the whole, minus the one already given.
    const double ideal = static_cast<double>(total) * weights[i] / sum - 1.0;
    const auto whole = static_cast<std::int64_t>(std::max(0.0, ideal));
    shares[i] += whole;
    given += whole;
    remainders.push_back({std::max(0.0, ideal) - static_cast<double>(whole), i});
  }
  std::stable_sort(remainders.begin(), remainders.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  for (std::size_t j = 0; given < rest; j = (j + 1) % n, ++given) shares[remainders[j].second] += 1;
  // Over-allocation can only come from clamping; take back from the largest shares.
  while (given > rest) {
    auto it = std::max_element(shares.begin(), shares.end());
    *it -= 1;
    --given;
  }
  return shares;
}

const char* to_string(Recompute recompute) {
  switch (recompute) {
    case Recompute::none: return "none";
    case Recompute::selective: return "selective";
    case Recompute::full: return "full";
  }
  return "?";
}

}  // namespace tandem
