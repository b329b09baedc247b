#include "sim/tensor_folding.hpp"

#include <algorithm>
#include <map>

namespace tandem::sim {

namespace {

// Why a group cannot be folded, or "" when it can: its members share one node that holds no other
// rank of the job, and that node's network ports are the devices' own.
std::string group_refusal(const Cluster& cluster, const std::vector<int>& members, int world) {
  const int node = cluster.global_node_of(members.front());
  for (int m : members)
    if (cluster.global_node_of(m) != node) return "a tensor-parallel group spans nodes";
  const NodeGroup& group = cluster.group_of(members.front());
  if (group.fabric == IntraNodeFabric::pcie)
    return "devices reach the network through a shared PCIe bus";
  const int first = members.front() - cluster.locate(members.front()).local;
  for (int r = first; r < first + group.devices_per_node && r < world; ++r)
    if (std::find(members.begin(), members.end(), r) == members.end())
      return "a node holds ranks of more than one tensor-parallel group";
  return "";
}

}  // namespace

void plan_tensor_folding(const Strategy& strategy, const Cluster& cluster, FoldingMode mode, bool record_trace,
                         FoldPlan& plan) {
  if (mode == FoldingMode::off) {
    plan.tensor_note = "tensor folding off";
    return;
  }
  if (record_trace) {
    plan.tensor_note = "no tensor folding: a trace records every rank";
    return;
  }
  const auto structure = strategy.tensor_structure();
  if (!structure || structure->group_size < 2) {
    plan.tensor_note = "no tensor folding: no tensor parallelism";
    return;
  }
  for (const NodeGroup& group : cluster.groups)
    if (group.shared_cores > 0) {
      plan.tensor_note = "no tensor folding: devices share a machine's cores";
      return;
    }
  if (cluster.has_spine() && cluster.network.oversubscription > 1.0) {
    plan.tensor_note = "no tensor folding: the fabric is oversubscribed (ghosts' traffic would share a bottleneck)";
    return;
  }
  const int world = strategy.world_size();
  std::map<int, std::vector<int>> members;  // by leader
  for (int r = 0; r < world; ++r) members[structure->leader_of[r]].push_back(r);
  for (const auto& [leader, group] : members) {
    const std::string why = group_refusal(cluster, group, world);
    if (!why.empty()) {
      plan.tensor_note = "no tensor folding: " + why;
      return;
    }
  }
  // Compose with replica folding: a rank mirrors what its leader's mirror does.
  std::vector<int> mirror_of(world);
  for (int r = 0; r < world; ++r) mirror_of[r] = plan.mirror_of[structure->leader_of[r]];
  plan.mirror_of = std::move(mirror_of);
  plan.active = true;
  plan.tensor_leader_of = structure->leader_of;
  plan.tensor_group_size = structure->group_size;
  plan.tensor_note = "tensor folding: 1 of " + std::to_string(structure->group_size) +
                     " members of each tensor-parallel group simulated, its collectives priced alone";
}

}  // namespace tandem::sim
