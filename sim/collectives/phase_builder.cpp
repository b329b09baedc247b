// The SimGrid-free half of schedule.hpp: building a phase's step runs from its transfers, and
// what a group's placement looks like (node of a rank, latency and bandwidth of an edge, the
// group's shape). Algorithms (ring.cpp, tree.cpp, ...) and the NCCL model use these without
// SimGrid; schedule.cpp runs the phases in SimGrid.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>
#include <unordered_map>

#include "sim/collectives/schedule.hpp"

namespace tandem::sim::collectives {

void PhaseBuilder::send(int first, int count, int peer, Bytes bytes_per_step, int lane) {
  if (count > 0) intervals_.push_back({first, count, peer, bytes_per_step, true, lane});
}

void PhaseBuilder::recv(int first, int count, int peer, Bytes bytes_per_step, int lane) {
  if (count > 0) intervals_.push_back({first, count, peer, bytes_per_step, false, lane});
}

Phase PhaseBuilder::build(Seconds latency, int pace_steps, double fill_share) const {
  Phase phase;
  phase.latency = latency;
  phase.fill_share = fill_share;
  // Sweep over the interval boundaries; between two consecutive boundaries the set of active
  // transfers is constant, so that stretch is one run.
  struct Event {
    int step;
    int index;
    bool open;
  };
  std::vector<Event> events;
  events.reserve(intervals_.size() * 2);
  for (int i = 0; i < static_cast<int>(intervals_.size()); ++i) {
    events.push_back({intervals_[i].first, i, true});
    events.push_back({intervals_[i].first + intervals_[i].count, i, false});
  }
  std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    if (a.step != b.step) return a.step < b.step;
    return a.index < b.index;
  });
  std::vector<int> active;  // interval indices, kept sorted (= insertion order of the algorithm)
  std::size_t e = 0;
  while (e < events.size()) {
    const int step = events[e].step;
    for (; e < events.size() && events[e].step == step; ++e) {
      if (events[e].open) {
        active.insert(std::upper_bound(active.begin(), active.end(), events[e].index), events[e].index);
      } else {
        active.erase(std::find(active.begin(), active.end(), events[e].index));
      }
    }
    if (active.empty() || e >= events.size()) continue;
    const int next = events[e].step;
    StepRun run;
    run.first = step;
    run.count = next - step;
    for (int index : active) {
      const Interval& in = intervals_[index];
      (in.is_send ? run.sends : run.recvs).push_back({in.peer, in.bytes, in.lane});
    }
    phase.active_steps += run.count;
    phase.span = run.first + run.count;
    phase.runs.push_back(std::move(run));
  }
  phase.pace_steps = pace_steps > 0 ? pace_steps : phase.active_steps;
  return phase;
}

std::int64_t exact_transfer_count(const Schedule& schedule) {
  std::int64_t total = 0;
  for (const Phase& phase : schedule.phases)
    for (const StepRun& run : phase.runs)
      total += static_cast<std::int64_t>(run.count) * static_cast<std::int64_t>(run.sends.size());
  return total;
}

int node_of(const TopologyView& topology, int rank) { return topology.node_of ? topology.node_of(rank) : 0; }

Seconds edge_latency(const TopologyView& topology, int a, int b) {
  const bool same = node_of(topology, a) == node_of(topology, b);
  const auto& f = same ? topology.intra_latency_of : topology.inter_latency_of;
  if (!f) return 0;
  return std::max(f(a), f(b));
}

BytesPerSecond edge_bandwidth(const TopologyView& topology, int a, int b) {
  const bool same = node_of(topology, a) == node_of(topology, b);
  const auto& f = same ? topology.intra_bandwidth_of : topology.inter_bandwidth_of;
  if (!f) return std::numeric_limits<double>::infinity();
  return std::min(f(a), f(b));
}

GroupShape analyze_group(const std::vector<int>& ranks, const TopologyView& topology) {
  GroupShape shape;
  shape.size = static_cast<int>(ranks.size());
  shape.local_index.resize(ranks.size());
  shape.node_slot.resize(ranks.size());
  std::unordered_map<int, int> slot_of;
  for (int i = 0; i < shape.size; ++i) {
    const int node = node_of(topology, ranks[i]);
    auto [it, inserted] = slot_of.emplace(node, static_cast<int>(shape.node_order.size()));
    if (inserted) {
      shape.node_order.push_back(node);
      shape.members.emplace_back();
    }
    shape.node_slot[i] = it->second;
    shape.local_index[i] = static_cast<int>(shape.members[it->second].size());
    shape.members[it->second].push_back(i);
  }
  if (topology.nccl_fabric_of && !ranks.empty()) {
    // One NCCL view for the group, or none: members on different fabrics (a mixed cluster's
    // H100 and A100 nodes) keep the links' own figures.
    const nccl::Fabric* first = topology.nccl_fabric_of(ranks.front());
    bool alike = first != nullptr;
    for (int r : ranks) {
      if (!alike) break;
      const nccl::Fabric* f = topology.nccl_fabric_of(r);
      alike = f == first || (f != nullptr && *f == *first);
    }
    if (alike) shape.nccl = *first;
  }
  shape.regular = !shape.members.empty();
  for (const auto& m : shape.members) shape.regular = shape.regular && m.size() == shape.members[0].size();
  shape.per_node = shape.regular ? static_cast<int>(shape.members[0].size()) : 0;

  const double inf = std::numeric_limits<double>::infinity();
  shape.intra_bandwidth = inf;
  shape.inter_bandwidth = inf;
  for (int r : ranks) {
    if (topology.intra_latency_of) shape.intra_latency = std::max(shape.intra_latency, topology.intra_latency_of(r));
    if (topology.inter_latency_of) shape.inter_latency = std::max(shape.inter_latency, topology.inter_latency_of(r));
    if (topology.intra_bandwidth_of) shape.intra_bandwidth = std::min(shape.intra_bandwidth, topology.intra_bandwidth_of(r));
    if (topology.inter_bandwidth_of) shape.inter_bandwidth = std::min(shape.inter_bandwidth, topology.inter_bandwidth_of(r));
  }
  return shape;
}

}  // namespace tandem::sim::collectives
