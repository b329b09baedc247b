// Direct algorithms: every member talks to its peers without intermediaries.
//   all-to-all     = pairwise exchange: on step k−1 (k = 1..n−1) send S/n to member me+k and
//                    receive from member me−k;
// and, for tiny groups (n ≤ kDirectMaxRanks), one-shot forms that pay a single latency:
//   all-reduce     = every member sends its whole buffer to every other one and reduces locally;
//   reduce-scatter = every member sends each peer that peer's S/n shard;
//   all-gather     = every member sends its S/n piece to every peer;
//   broadcast      = the root sends S to every member.
#include <algorithm>
#include <limits>
#include <stdexcept>

#include "sim/collectives/algorithms.hpp"

namespace tandem::sim::collectives {

bool direct_supports(OpKind kind) {
  return kind == OpKind::all_to_all || kind == OpKind::all_reduce || kind == OpKind::reduce_scatter ||
         kind == OpKind::all_gather || kind == OpKind::broadcast;
}

Schedule direct_schedule(const CollectiveCall& call, const TopologyView& topology, bool phase_latency) {
  const int n = static_cast<int>(call.ranks.size());
  const int me = call.me;
  const int my_rank = call.ranks[me];
  const Bytes S = call.bytes;
  Seconds latency = 0;
  for (int r : call.ranks)
    if (phase_latency && r != my_rank) latency = std::max({latency, edge_latency(topology, my_rank, r), edge_latency(topology, r, my_rank)});

  PhaseBuilder phase;
  switch (call.kind) {
    case OpKind::all_to_all:
      for (int k = 1; k < n; ++k) {
        phase.send(k - 1, 1, call.ranks[(me + k) % n], S / n);
        phase.recv(k - 1, 1, call.ranks[(me - k + n) % n], S / n);
      }
      break;
    case OpKind::all_reduce:
    case OpKind::reduce_scatter:
    case OpKind::all_gather: {
      const Bytes each = call.kind == OpKind::all_reduce ? S : S / n;
      for (int k = 1; k < n; ++k) {
        phase.send(0, 1, call.ranks[(me + k) % n], each);
        phase.recv(0, 1, call.ranks[(me - k + n) % n], each);
      }
      break;
    }
    case OpKind::broadcast:
      if (me == call.root) {
        for (int k = 1; k < n; ++k) phase.send(0, 1, call.ranks[(me + k) % n], S);
      } else {
        phase.recv(0, 1, call.ranks[call.root], S);
      }
      break;
    default:
      throw std::invalid_argument(std::string("direct: unsupported collective ") + to_string(call.kind));
  }
  Schedule schedule;
  schedule.phases.push_back(phase.build(latency));
  return schedule;
}

int direct_steps(OpKind kind, int n) { return kind == OpKind::all_to_all ? n - 1 : 1; }

Seconds direct_estimate(OpKind kind, Bytes bytes, const GroupShape& shape) {
  const int n = shape.size;
  // The one-shot forms are only worth it (and only offered by the tuner) on tiny groups.
  if (!direct_supports(kind) || (kind != OpKind::all_to_all && n > kDirectMaxRanks))
    return std::numeric_limits<double>::infinity();
  const Seconds a = group_latency(shape);
  const BytesPerSecond b = group_bandwidth(shape);
  switch (kind) {
    case OpKind::all_to_all: return (n - 1) * (a + bytes / n / b);
    case OpKind::all_reduce:
    case OpKind::broadcast: return a + (n - 1) * bytes / b;
    case OpKind::reduce_scatter:
    case OpKind::all_gather: return a + (n - 1) * (bytes / n) / b;
    default: return std::numeric_limits<double>::infinity();
  }
}

}  // namespace tandem::sim::collectives
