#include "scenarios/layer_resplit.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>

#include "strategies/models/transformer.hpp"

namespace tandem {

Bytes layer_state_bytes_per_rank(const Scenario& scenario) {
  if (scenario.model.kind != ModelSpec::Kind::transformer) return 0;
  const ParallelConfig& p = scenario.parallel;
  const double parameters = static_cast<double>(block_parameter_count(scenario.model.transformer)) /
                            std::max(1, p.tensor_model_parallel_size);
  const DType precision = scenario.training.precision;
  const double optimizer = precision == DType::fp32 ? 8.0 : 12.0;
  const double replicas = std::max(1, p.data_parallel_size);
  const double weights = static_cast<double>(dtype_bytes(precision)) / (p.zero_stage >= 3 ? replicas : 1.0);
  return parameters * (weights + optimizer / (p.zero_stage >= 1 ? replicas : 1.0));
}

Seconds layer_resplit_s(const Strategy& from, const Strategy& to, const Cluster& cluster, Bytes layer_bytes_per_rank) {
  const std::vector<RankRole> a = from.rank_roles(), b = to.rank_roles();
  // One rank per (replica, stage): its layers before and after.
  struct Stage {
    int rank = -1;
    int before = 0, after = 0;
  };
  std::map<int, std::map<int, Stage>> replicas;  // replica -> stage -> its first rank and layers
  for (std::size_t r = 0; r < a.size() && r < b.size(); ++r) {
    if (a[r].stage < 0 || a[r].replica < 0) continue;
    Stage& s = replicas[a[r].replica][a[r].stage];
    if (s.rank >= 0) continue;
    s = {static_cast<int>(r), a[r].layers, b[r].layers};
  }
  Seconds slowest = 0;
  for (const auto& [replica, stages] : replicas) {
    int cumulative_before = 0, cumulative_after = 0;
    for (auto it = stages.begin(); it != stages.end(); ++it) {
      const auto next = std::next(it);
      if (next == stages.end()) break;
      cumulative_before += it->second.before;
      cumulative_after += it->second.after;
      const int moved = std::abs(cumulative_before - cumulative_after);
      if (moved == 0) continue;
      const BytesPerSecond bandwidth = cluster.path_bandwidth_bytes_per_s(it->second.rank, next->second.rank);
      if (bandwidth > 0) slowest = std::max(slowest, moved * layer_bytes_per_rank / bandwidth);
    }
  }
  return slowest;
}

}  // namespace tandem
