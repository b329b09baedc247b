// NVLink SHARP all-reduce (NCCL's NVLS algorithm) as flows: the switch does the reduction, so a
// GPU's port carries its buffer up and the reduced result down, plus one shard each way for the
// multicast store (S(1 + 1/n) per direction). The switch is not a host of the platform: the
// same per-port load is put on the links by having every member send S(1 + 1/n)/(n - 1) to each
// other member, which crosses each sender's uplink and each receiver's downlink once.
#include <algorithm>
#include <stdexcept>

#include "sim/collectives/algorithms.hpp"

namespace tandem::sim::collectives {

bool nvls_applies(OpKind kind, const GroupShape& shape) {
  return kind == OpKind::all_reduce && shape.nccl && shape.nccl->nvswitch && shape.nccl->nvlink &&
         (shape.nccl->arch == nccl::Arch::hopper || shape.nccl->arch == nccl::Arch::blackwell) && shape.size >= 2 &&
         !shape.spans_nodes();
}

Schedule nvls_schedule(const CollectiveCall& call, const TopologyView& topology, bool phase_latency) {
  if (call.kind != OpKind::all_reduce) throw std::invalid_argument("nvls: all-reduce only");
  const int n = static_cast<int>(call.ranks.size());
  const int me = call.me;
  const Bytes each = call.bytes * (1.0 + 1.0 / n) / (n - 1);
  Seconds latency = 0;
  PhaseBuilder phase;
  for (int k = 1; k < n; ++k) {
    const int to = call.ranks[(me + k) % n];
    const int from = call.ranks[(me - k + n) % n];
    phase.send(0, 1, to, each);
    phase.recv(0, 1, from, each);
    if (phase_latency) latency = std::max({latency, edge_latency(topology, call.ranks[me], to), edge_latency(topology, from, call.ranks[me])});
  }
  Schedule schedule;
  schedule.phases.push_back(phase.build(latency));
  return schedule;
}

}  // namespace tandem::sim::collectives
