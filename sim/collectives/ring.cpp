// Ring algorithms (NCCL's default for large messages):
//   all-reduce      = reduce-scatter + all-gather: 2(n−1) steps of S/n to the next member;
//   reduce-scatter, all-gather: (n−1) steps of S/n;
//   broadcast       = a chain from the root, pipelined in chunks: the member at chain position
//                     p receives chunk j on step j+p−1 and forwards it on step j+p.
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "sim/collectives/algorithms.hpp"

namespace tandem::sim::collectives {

namespace {

// Max latency over consecutive edges of `ranks` rotated to start at `first`; `closed` adds the
// edge from the last back to the first.
Seconds path_latency(const std::vector<int>& ranks, int first, bool closed, const TopologyView& topology) {
  const int n = static_cast<int>(ranks.size());
  Seconds latency = 0;
  const int edges = closed ? n : n - 1;
  for (int k = 0; k < edges; ++k) {
    const int a = ranks[(first + k) % n];
    const int b = ranks[(first + k + 1) % n];
    latency = std::max(latency, edge_latency(topology, a, b));
  }
  return latency;
}

}  // namespace

int chunk_count(Bytes bytes) {
  if (!(bytes > 0)) return 1;
  const double chunks = std::ceil(bytes / kChunkBytes);
  return static_cast<int>(std::clamp(chunks, 1.0, static_cast<double>(kMaxChunks)));
}

Seconds ring_latency(const std::vector<int>& ranks, const TopologyView& topology) {
  return path_latency(ranks, 0, true, topology);
}

Schedule ring_schedule(const CollectiveCall& call, const TopologyView& topology, bool phase_latency) {
  const int n = static_cast<int>(call.ranks.size());
  const int me = call.me;
  const Bytes S = call.bytes;
  Schedule schedule;
  PhaseBuilder phase;
  switch (call.kind) {
    case OpKind::all_reduce:
    case OpKind::reduce_scatter:
    case OpKind::all_gather: {
      const int steps = call.kind == OpKind::all_reduce ? 2 * (n - 1) : n - 1;
      const int next = call.ranks[(me + 1) % n];
      const int prev = call.ranks[(me + n - 1) % n];
      phase.send(0, steps, next, S / n);
      phase.recv(0, steps, prev, S / n);
      schedule.phases.push_back(phase.build(phase_latency ? ring_latency(call.ranks, topology) : 0.0));
      break;
    }
    case OpKind::broadcast: {
      const int chunks = chunk_count(S);
      const Bytes chunk = S / chunks;
      const int p = (me - call.root + n) % n;  // position in the chain from the root
      if (p > 0) phase.recv(p - 1, chunks, call.ranks[(call.root + p - 1) % n], chunk);
      if (p < n - 1) phase.send(p, chunks, call.ranks[(call.root + p + 1) % n], chunk);
      schedule.phases.push_back(
          phase.build(phase_latency ? path_latency(call.ranks, call.root, false, topology) : 0.0, chunks));
      break;
    }
    default:
      throw std::invalid_argument(std::string("ring: unsupported collective ") + to_string(call.kind));
  }
  return schedule;
}

int ring_steps(OpKind kind, int n, Bytes bytes) {
  switch (kind) {
    case OpKind::all_reduce: return 2 * (n - 1);
    case OpKind::reduce_scatter:
    case OpKind::all_gather: return n - 1;
    case OpKind::broadcast: return chunk_count(bytes) + n - 2;
    default: return 0;
  }
}

Seconds ring_estimate(OpKind kind, Bytes bytes, const GroupShape& shape) {
  const int n = shape.size;
  const Seconds a = group_latency(shape);
  const BytesPerSecond b = group_bandwidth(shape);
  switch (kind) {
    case OpKind::all_reduce: return 2.0 * (n - 1) * (a + bytes / n / b);
    case OpKind::reduce_scatter:
    case OpKind::all_gather: return (n - 1) * (a + bytes / n / b);
    case OpKind::broadcast: {
      const int chunks = chunk_count(bytes);
      return (chunks + n - 2) * (a + bytes / chunks / b);
    }
    default: return std::numeric_limits<double>::infinity();
  }
}

bool rail_ring_applies(OpKind kind, const GroupShape& shape) {
  const bool kind_ok = kind == OpKind::all_reduce || kind == OpKind::reduce_scatter || kind == OpKind::all_gather;
  return kind_ok && shape.nccl && shape.regular && shape.nodes() >= 2 && shape.per_node >= 2;
}

Schedule rail_ring_schedule(const CollectiveCall& call, const GroupShape& shape, const TopologyView& topology,
                            bool phase_latency) {
  if (!rail_ring_applies(call.kind, shape)) throw std::invalid_argument("rail ring: group or kind not supported");
  const int n = shape.size;
  const int m = shape.per_node;
  const int N = shape.nodes();
  const int rings = std::clamp(shape.nccl->nics_per_node, 1, m);
  const int slot = shape.node_slot[call.me];
  const int local = shape.local_index[call.me];
  const int steps = call.kind == OpKind::all_reduce ? 2 * (n - 1) : n - 1;
  const Bytes per_step = call.bytes / rings / n;
  auto rank_at = [&](int node_slot, int local_index) { return call.ranks[shape.members[node_slot][local_index]]; };
  PhaseBuilder phase;
  for (int c = 0; c < rings; ++c) {
    const int j = ((local - c) % m + m) % m;  // position within this node's stretch of ring c
    const int next = j < m - 1 ? rank_at(slot, (local + 1) % m) : rank_at((slot + 1) % N, c);
    const int prev = j > 0 ? rank_at(slot, (local - 1 + m) % m) : rank_at((slot - 1 + N) % N, (c - 1 + m) % m);
    phase.send(0, steps, next, per_step, c);
    phase.recv(0, steps, prev, per_step, c);
  }
  Seconds latency = 0;
  if (phase_latency) latency = std::max(shape.intra_latency, shape.inter_latency);
  (void)topology;
  Schedule schedule;
  schedule.phases.push_back(phase.build(latency));
  return schedule;
}

}  // namespace tandem::sim::collectives
