#include "exec/cpu/global_state.hpp"

#include <cstring>
#include <stdexcept>

namespace tandem::exec::cpu {

std::map<std::string, std::vector<float>> assemble_global(
    const std::vector<std::vector<PlacedTensor>>& ranks) {
  std::map<std::string, std::vector<float>> global;
  std::map<std::string, std::vector<bool>> written;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    for (const PlacedTensor& t : ranks[r]) {
      const TensorPlacement& p = t.placement;
      const auto n = static_cast<std::size_t>(p.global_numel());
      auto [it, fresh] = global.try_emplace(p.name, n, 0.0f);
      auto& seen = written.try_emplace(p.name, n, false).first->second;
      if (it->second.size() != n)
        throw std::logic_error("global state: '" + p.name + "' placed with two global sizes");
      for (std::size_t i = 0; i < t.values.size(); ++i) {
        const std::int64_t g = p.global_index(static_cast<std::int64_t>(i));
        if (g < 0) continue;
        const auto gi = static_cast<std::size_t>(g);
        // Replicas must hold the same bits (NaN-safe comparison).
        if (seen[gi] && std::memcmp(&it->second[gi], &t.values[i], sizeof(float)) != 0)
          throw std::logic_error("global state: replicas of '" + p.name + "' differ at element " +
                                 std::to_string(g) + " (rank " + std::to_string(r) + ")");
        it->second[gi] = t.values[i];
        seen[gi] = true;
      }
    }
  }
  for (const auto& [name, seen] : written)
    for (std::size_t i = 0; i < seen.size(); ++i)
      if (!seen[i])
        throw std::logic_error("global state: element " + std::to_string(i) + " of '" + name +
                               "' is held by no rank");
  return global;
}

}  // namespace tandem::exec::cpu
