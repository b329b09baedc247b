#include "sim/replica_folding.hpp"

#include <map>
#include <stdexcept>

namespace tandem::sim {

const char* to_string(ReplicaFolding folding) { return folding == ReplicaFolding::off ? "off" : "auto"; }

ReplicaFolding parse_replica_folding(const std::string& text) {
  if (text == "auto") return ReplicaFolding::automatic;
  if (text == "off") return ReplicaFolding::off;
  throw std::invalid_argument("unknown replica folding '" + text + "' (expected auto or off)");
}

int FoldPlan::simulated_ranks() const {
  int n = 0;
  for (std::size_t r = 0; r < mirror_of.size(); ++r) n += simulated(static_cast<int>(r)) ? 1 : 0;
  return active ? n : static_cast<int>(mirror_of.size());
}

namespace {

bool same_links(const LinkSpec& a, const LinkSpec& b) {
  return a.bandwidth_bytes_per_s == b.bandwidth_bytes_per_s && a.latency_s == b.latency_s;
}

// Two devices behave the same when their profiles and their ports are the same.
bool same_kind_and_wiring(const Cluster& cluster, int a, int b) {
  const NodeGroup& ga = cluster.group_of(a);
  const NodeGroup& gb = cluster.group_of(b);
  if (&ga == &gb) return true;
  return ga.device.name == gb.device.name && ga.devices_per_node == gb.devices_per_node &&
         ga.fabric == gb.fabric && same_links(ga.intra_link, gb.intra_link) &&
         same_links(ga.intra_bus, gb.intra_bus) && same_links(ga.nic, gb.nic);
}

// A consistent one-to-one renaming (ghost node -> simulated node, ghost leaf -> simulated leaf).
class Renaming {
 public:
  bool map(int from, int to) {
    auto [it, fresh] = forward_.emplace(from, to);
    if (!fresh) return it->second == to;
    auto [back, fresh_back] = backward_.emplace(to, from);
    return fresh_back || back->second == from;
  }

 private:
  std::map<int, int> forward_, backward_;
};

// Mirrors every rank onto the block of the first `block` replicas, if the cluster allows it:
// blocks own disjoint nodes, and each ghost sits on the same kind of device, wired the same
// way, at the same place in its node and leaf as the rank it mirrors.
bool try_block(const Cluster& cluster, const std::vector<std::vector<int>>& rank_at, int block,
               std::vector<int>& mirror_of) {
  const int replicas = static_cast<int>(rank_at.size());
  std::map<int, int> block_of_node;
  for (int d = 0; d < replicas; ++d)
    for (int rank : rank_at[d]) {
      auto [it, fresh] = block_of_node.emplace(cluster.global_node_of(rank), d / block);
      if (!fresh && it->second != d / block) return false;  // two blocks share a node
    }
  for (int d = block; d < replicas; d += block) {
    Renaming nodes, leaves;
    for (int j = 0; j < block; ++j)
      for (std::size_t p = 0; p < rank_at[d + j].size(); ++p) {
        const int ghost = rank_at[d + j][p];
        const int mirror = rank_at[j][p];
        const int ghost_node = cluster.global_node_of(ghost), mirror_node = cluster.global_node_of(mirror);
        if (!same_kind_and_wiring(cluster, ghost, mirror) ||
            cluster.locate(ghost).local != cluster.locate(mirror).local || !nodes.map(ghost_node, mirror_node) ||
            !leaves.map(cluster.leaf_of_node(ghost_node), cluster.leaf_of_node(mirror_node)))
          return false;
        mirror_of[ghost] = mirror;
      }
  }
  return true;
}

}  // namespace

FoldPlan plan_replica_folding(const Strategy& strategy, const Cluster& cluster, ReplicaFolding mode,
                              bool record_trace) {
  FoldPlan plan;
  const int world = strategy.world_size();
  plan.mirror_of.resize(world);
  for (int r = 0; r < world; ++r) plan.mirror_of[r] = r;
  if (mode == ReplicaFolding::off) {
    plan.note = "replica folding off";
    return plan;
  }
  if (record_trace) {
    plan.note = "no replica folding: a trace records every rank";
    return plan;
  }
  const auto structure = strategy.identical_replicas();
  if (!structure || structure->replicas < 2) {
    plan.note = structure ? "one replica" : "no replica folding: replicas run different work";
    return plan;
  }
  for (const NodeGroup& group : cluster.groups)
    if (group.shared_cores > 0) {
      plan.note = "no replica folding: devices share a machine's cores";
      return plan;
    }
  if (cluster.has_spine() && cluster.network.oversubscription > 1.0) {
    plan.note = "no replica folding: the fabric is oversubscribed (replicas would share a bottleneck)";
    return plan;
  }
  plan.replicas = structure->replicas;
  // rank_at[replica][position]
  int positions = 0;
  for (int p : structure->position_of) positions = std::max(positions, p + 1);
  std::vector<std::vector<int>> rank_at(plan.replicas, std::vector<int>(positions, -1));
  for (int r = 0; r < world; ++r) rank_at[structure->replica_of[r]][structure->position_of[r]] = r;

  for (int block = 1; block * 2 <= plan.replicas; ++block) {
    if (plan.replicas % block != 0) continue;
    std::vector<int> mirror_of = plan.mirror_of;
    if (!try_block(cluster, rank_at, block, mirror_of)) continue;
    plan.active = true;
    plan.simulated_replicas = block;
    plan.mirror_of = std::move(mirror_of);
    plan.note = "replica folding: " + std::to_string(block) + " of " + std::to_string(plan.replicas) +
                " replicas simulated, the others mirrored";
    return plan;
  }
  plan.note = "no replica folding: no block of replicas tiles the cluster identically";
  return plan;
}

}  // namespace tandem::sim
