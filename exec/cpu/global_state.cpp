#include "exec/cpu/global_state.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace tandem::exec::cpu {

namespace {

using Global = std::map<std::string, std::vector<float>>;
using Seen = std::map<std::string, std::vector<bool>>;

// Writes `value` at element `g` of `name`'s values, refusing a replica that disagrees (NaN-safe).
void put(std::vector<float>& values, std::vector<bool>& mask, const std::string& name, std::size_t g, float value,
         const std::string& who, bool first_wins) {
  if (mask[g] && first_wins) return;
  if (mask[g] && std::memcmp(&values[g], &value, sizeof(float)) != 0)
    throw std::logic_error("global state: replicas of '" + name + "' differ at element " + std::to_string(g) + " (" +
                           who + ")");
  values[g] = value;
  mask[g] = true;
}

// The values and mask of `name`, `n` elements (made on first use; once per tensor, not per element).
std::pair<std::vector<float>&, std::vector<bool>&> slot(Global& global, Seen& seen, const std::string& name,
                                                        std::size_t n) {
  auto& values = global.try_emplace(name, n, 0.0f).first->second;
  auto& mask = seen.try_emplace(name, n, false).first->second;
  if (values.size() != n) throw std::logic_error("global state: '" + name + "' placed with two global sizes");
  return {values, mask};
}

// Every placed element of `tensors` into `global`.
void place_all(Global& global, Seen& seen, const std::vector<PlacedTensor>& tensors, const std::string& who,
               bool first_wins = false) {
  for (const PlacedTensor& t : tensors) {
    const TensorPlacement& p = t.placement;
    auto [values, mask] = slot(global, seen, p.name, static_cast<std::size_t>(p.global_numel()));
    for (std::size_t i = 0; i < t.values.size(); ++i) {
      const std::int64_t g = p.global_index(static_cast<std::int64_t>(i));
      if (g >= 0) put(values, mask, p.name, static_cast<std::size_t>(g), t.values[i], who, first_wins);
    }
  }
}

void require_covered(const Seen& seen) {
  for (const auto& [name, mask] : seen)
    for (std::size_t i = 0; i < mask.size(); ++i)
      if (!mask[i])
        throw std::logic_error("global state: element " + std::to_string(i) + " of '" + name + "' is held by no rank");
}

}  // namespace

Global assemble_global(const std::vector<std::vector<PlacedTensor>>& ranks, bool first_wins) {
  Global global;
  Seen seen;
  for (std::size_t r = 0; r < ranks.size(); ++r)
    place_all(global, seen, ranks[r], "rank " + std::to_string(r), first_wins);
  require_covered(seen);
  return global;
}

const std::vector<float>& restorable_values(const Global& global, const TensorPlacement& p) {
  auto it = global.find(p.name);
  if (it == global.end()) throw std::runtime_error("the checkpoint has no tensor '" + p.name + "'");
  if (static_cast<std::int64_t>(it->second.size()) != p.global_numel())
    throw std::runtime_error("the checkpoint's '" + p.name + "' has " + std::to_string(it->second.size()) +
                             " values, this run's has " + std::to_string(p.global_numel()));
  return it->second;
}

void extract_part(const std::vector<float>& values, const TensorPlacement& p, float* out, std::int64_t numel) {
  for (std::int64_t i = 0; i < numel; ++i) {
    const std::int64_t g = p.global_index(i);
    out[i] = g < 0 ? 0.0f : values[static_cast<std::size_t>(g)];
  }
}

Global partial_global(const std::vector<PlacedTensor>& mine) {
  Global global;
  Seen seen;
  place_all(global, seen, mine, "this process");
  for (auto& [name, values] : global) {
    const std::vector<bool>& mask = seen.at(name);
    for (std::size_t i = 0; i < values.size(); ++i)
      if (!mask[i]) values[i] = std::numeric_limits<float>::quiet_NaN();
  }
  return global;
}

Global merge_partials(const std::vector<Global>& parts) {
  Global global;
  Seen seen;
  for (std::size_t r = 0; r < parts.size(); ++r)
    for (const auto& [name, values] : parts[r]) {
      auto [merged, mask] = slot(global, seen, name, values.size());
      const std::string who = "process " + std::to_string(r);
      for (std::size_t i = 0; i < values.size(); ++i)
        if (!std::isnan(values[i])) put(merged, mask, name, i, values[i], who, false);
    }
  require_covered(seen);
  return global;
}

}  // namespace tandem::exec::cpu
