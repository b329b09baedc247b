#include "cli/straggler_watch.hpp"

#include <algorithm>
#include <cstdio>
#include <map>

namespace tandem::cli {

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

std::optional<std::string> StragglerWatch::observe(const exec::cpu::IterationStats& stats) {
  const std::vector<Seconds>& k = stats.rank_kernels_s;
  if (k.size() < 2 || stats.warmup) return std::nullopt;
  streak_.resize(k.size(), 0);
  flagged_.resize(k.size(), false);
  std::optional<std::string> line;
  const auto class_of = [&](std::size_t rank) { return rank < peer_class_.size() ? peer_class_[rank] : 0; };
  for (std::size_t r = 0; r < k.size(); ++r) {
    std::vector<double> peers;
    for (std::size_t q = 0; q < k.size(); ++q)
      if (q != r && class_of(q) == class_of(r)) peers.push_back(k[q]);
    if (peers.empty()) continue;  // alone in its kind of work: nobody to compare with
    const double typical = median(peers);
    const bool slow = typical > 0 && k[r] >= kRatio * typical;
    streak_[r] = slow ? streak_[r] + 1 : 0;
    if (!slow) flagged_[r] = false;
    if (streak_[r] >= kIterations && !flagged_[r]) {
      flagged_[r] = true;
      char text[200];
      std::snprintf(text, sizeof text, "straggler   rank %zu: kernels %.2fx its peers' median for %d iterations, from iteration %d\n",
                    r, k[r] / typical, kIterations, stats.iteration - kIterations + 1);
      line = line.value_or("") + text;
    }
  }
  return line;
}

std::vector<int> StragglerWatch::classes_of(const std::vector<RankRole>& roles) {
  std::map<std::pair<int, int>, int> ids;
  std::vector<int> out;
  for (const RankRole& role : roles)
    out.push_back(ids.try_emplace({role.stage, role.layers}, static_cast<int>(ids.size())).first->second);
  return out;
}

}  // namespace tandem::cli
