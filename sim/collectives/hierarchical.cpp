// Hierarchical algorithms for a group spanning several nodes with the same number m of members
// on each of its N nodes (NCCL's intra-node/inter-node split, one "rail" per local index):
//   all-reduce     = intra-node ring reduce-scatter (m−1 steps of S/m)
//                  + ring all-reduce of each S/m shard among the N members with the same local
//                    index (2(N−1) steps of S/(mN)), the rails working in parallel
//                  + intra-node ring all-gather (m−1 steps of S/m);
//   reduce-scatter = intra-node reduce-scatter + rail reduce-scatter (N−1 steps of S/(mN));
//   all-gather     = rail all-gather + intra-node all-gather.
// Each part is a phase, so the aggregated form keeps their order.
#include <algorithm>
#include <limits>
#include <stdexcept>

#include "sim/collectives/algorithms.hpp"

namespace tandem::sim::collectives {

namespace {

// One ring phase over `members` (global ranks, ring order), this member at `position`.
Phase ring_phase(const std::vector<int>& members, int position, int steps, Bytes bytes_per_step,
                 const TopologyView& topology, bool phase_latency) {
  const int k = static_cast<int>(members.size());
  PhaseBuilder phase;
  phase.send(0, steps, members[(position + 1) % k], bytes_per_step);
  phase.recv(0, steps, members[(position + k - 1) % k], bytes_per_step);
  return phase.build(phase_latency ? ring_latency(members, topology) : 0.0);
}

}  // namespace

bool hierarchical_applies(OpKind kind, const GroupShape& shape) {
  const bool kind_ok = kind == OpKind::all_reduce || kind == OpKind::reduce_scatter || kind == OpKind::all_gather;
  return kind_ok && shape.regular && shape.nodes() >= 2 && shape.per_node >= 2;
}

Schedule hierarchical_schedule(const CollectiveCall& call, const GroupShape& shape, const TopologyView& topology,
                               bool phase_latency) {
  if (!hierarchical_applies(call.kind, shape)) throw std::invalid_argument("hierarchical: group or kind not supported");
  const int m = shape.per_node;
  const int N = shape.nodes();
  const int slot = shape.node_slot[call.me];
  const int local = shape.local_index[call.me];
  std::vector<int> node_members;
  node_members.reserve(m);
  for (int g : shape.members[slot]) node_members.push_back(call.ranks[g]);
  std::vector<int> rail;
  rail.reserve(N);
  for (int k = 0; k < N; ++k) rail.push_back(call.ranks[shape.members[k][local]]);

  const Bytes S = call.bytes;
  const Bytes shard = S / m;
  const Bytes piece = S / (static_cast<double>(m) * N);
  Schedule schedule;
  auto intra = [&](int steps) { schedule.phases.push_back(ring_phase(node_members, local, steps, shard, topology, phase_latency)); };
  auto inter = [&](int steps) { schedule.phases.push_back(ring_phase(rail, slot, steps, piece, topology, phase_latency)); };
  switch (call.kind) {
    case OpKind::all_reduce:
      intra(m - 1);
      inter(2 * (N - 1));
      intra(m - 1);
      break;
    case OpKind::reduce_scatter:
      intra(m - 1);
      inter(N - 1);
      break;
    case OpKind::all_gather:
      inter(N - 1);
      intra(m - 1);
      break;
    default:
      throw std::invalid_argument(std::string("hierarchical: unsupported collective ") + to_string(call.kind));
  }
  return schedule;
}

int hierarchical_steps(OpKind kind, const GroupShape& shape) {
  const int m = shape.per_node;
  const int N = shape.nodes();
  return kind == OpKind::all_reduce ? 2 * (m - 1) + 2 * (N - 1) : (m - 1) + (N - 1);
}

Seconds hierarchical_estimate(OpKind kind, Bytes bytes, const GroupShape& shape) {
  if (!hierarchical_applies(kind, shape)) return std::numeric_limits<double>::infinity();
  const double m = shape.per_node;
  const double N = shape.nodes();
  const double intra = (m - 1) * (shape.intra_latency + bytes / m / shape.intra_bandwidth);
  const double inter = (N - 1) * (shape.inter_latency + bytes / (m * N) / shape.inter_bandwidth);
  return kind == OpKind::all_reduce ? 2 * (intra + inter) : intra + inter;
}

}  // namespace tandem::sim::collectives
