// Internal to sim/collectives: each algorithm family builds one member's Schedule and gives an
// alpha-beta estimate of its time (used by the tuner in choose.cpp). Estimates return +inf
// when the algorithm does not implement that kind on that group.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "sim/collectives/collective.hpp"
#include "sim/collectives/schedule.hpp"

namespace tandem::sim::collectives {

// Pipelining: large transfers are cut into chunks of about this size (NCCL's Simple protocol
// moves 512 KiB slices), at most kMaxChunks of them.
inline constexpr Bytes kChunkBytes = 512.0 * 1024.0;
inline constexpr int kMaxChunks = 512;
int chunk_count(Bytes bytes);

// Groups up to this size may use the direct algorithms for kinds other than all-to-all.
inline constexpr int kDirectMaxRanks = 8;

// Maximum one-way latency over the edges a -> b of a ring through `ranks` (in order).
Seconds ring_latency(const std::vector<int>& ranks, const TopologyView& topology);

// ---- ring.cpp ----
// `phase_latency`: compute each phase's group-wide slowest-edge latency (an O(n) scan that the
// aggregated form without a replay needs; a replay of all members skips it).
Schedule ring_schedule(const CollectiveCall& call, const TopologyView& topology, bool phase_latency = true);
// Steps on one member's critical path (for the fidelity choice).
int ring_steps(OpKind kind, int n, Bytes bytes);
Seconds ring_estimate(OpKind kind, Bytes bytes, const GroupShape& shape);

// NCCL's rings across nodes (a group with an NCCL fabric spanning several nodes, the same number
// of members on each): one ring per member of a node (one per NIC, NCCL's channels), each
// carrying 1/k of the buffer, ring c entering every node at local index c and leaving it from
// local index c-1, so that every NIC carries one ring each way (all-reduce, reduce-scatter,
// all-gather; same steps as the flat ring).
bool rail_ring_applies(OpKind kind, const GroupShape& shape);
Schedule rail_ring_schedule(const CollectiveCall& call, const GroupShape& shape, const TopologyView& topology,
                            bool phase_latency = true);

// ---- nvls.cpp ----
// NVLink SHARP all-reduce in one NVSwitch node (Hopper and later): each GPU pushes its buffer
// into the switch, which reduces it, and pulls back its reduced shard, then multicasts it: about
// S(1 + 1/n) through each GPU's port each way, in one step (nccl-tests issue #2140's factor).
bool nvls_applies(OpKind kind, const GroupShape& shape);
Schedule nvls_schedule(const CollectiveCall& call, const TopologyView& topology, bool phase_latency = true);

// ---- nccl_flows.cpp ----
// How NCCL's choice shows on the modeled links, for a group with an NCCL fabric: per edge class
// (same node, across nodes) the fraction of the link's bandwidth the payload gets (the flows
// carry payload / fraction: protocol overhead and NCCL's achievable rate), and the per-step
// latency beyond the route's that makes the steps add up to NCCL's latency.
struct WireModel {
  double efficiency[2] = {1.0, 1.0};
  Seconds step_overhead_s = 0;  // per step on the critical path, beyond the route's latency
  nccl::Estimate estimate;  // NCCL's choice, at its achievable bandwidth
};
std::optional<WireModel> nccl_wire_model(const CollectiveCall& call, CollectiveAlgorithm algorithm,
                                         const GroupShape& shape);
// Scales one member's transfers to wire bytes and sets its phases' step overhead.
void apply_wire_model(Schedule& schedule, int my_rank, const WireModel& wire, const TopologyView& topology);
// NCCL's algorithm for the simulator's, and back.
nccl::Algorithm nccl_algorithm_of(CollectiveAlgorithm algorithm);
CollectiveAlgorithm collective_algorithm_of(nccl::Algorithm algorithm);

// ---- tree.cpp ----
// NCCL's binary tree over positions 0..n-1 (ncclGetBtree): parent (-1 for the root) and up to
// two children (-1 when absent).
struct TreeLinks {
  int parent = -1;
  int child[2] = {-1, -1};
};
TreeLinks btree(int n, int position);
// NCCL's double binary tree: tree 0 is btree, tree 1 is the mirrored (n even) or shifted (n odd) one.
TreeLinks double_tree(int n, int position, int which);
int tree_height(int n, int which);  // levels below the root
bool tree_supports(OpKind kind);
Schedule tree_schedule(const CollectiveCall& call, const TopologyView& topology, bool phase_latency = true);
int tree_steps(OpKind kind, int n, Bytes bytes);
Seconds tree_estimate(OpKind kind, Bytes bytes, const GroupShape& shape);

// ---- hierarchical.cpp ----
bool hierarchical_applies(OpKind kind, const GroupShape& shape);
Schedule hierarchical_schedule(const CollectiveCall& call, const GroupShape& shape, const TopologyView& topology,
                               bool phase_latency = true);
int hierarchical_steps(OpKind kind, const GroupShape& shape);
Seconds hierarchical_estimate(OpKind kind, Bytes bytes, const GroupShape& shape);

// ---- direct.cpp ----
bool direct_supports(OpKind kind);
Schedule direct_schedule(const CollectiveCall& call, const TopologyView& topology, bool phase_latency = true);
int direct_steps(OpKind kind, int n);
Seconds direct_estimate(OpKind kind, Bytes bytes, const GroupShape& shape);

// Figures of the slowest edge an algorithm spanning the whole group meets.
inline Seconds group_latency(const GroupShape& s) { return s.spans_nodes() ? std::max(s.inter_latency, s.intra_latency) : s.intra_latency; }
inline BytesPerSecond group_bandwidth(const GroupShape& s) {
  return s.spans_nodes() ? std::min(s.inter_bandwidth, s.intra_bandwidth) : s.intra_bandwidth;
}

// choose.cpp: choose_algorithm on an already analysed group.
CollectiveAlgorithm choose_for_shape(OpKind kind, Bytes bytes, const GroupShape& shape);

// collective.cpp: the algorithm that actually runs for a requested one (not automatic):
// unsupported combinations fall back (all-to-all → direct; tree without that kind → ring;
// hierarchical on an irregular or single-node group → ring). `shape` is only read for
// hierarchical.
CollectiveAlgorithm effective_algorithm(CollectiveAlgorithm requested, OpKind kind, const GroupShape& shape);
// The aggregated form replays the whole group's lockstep schedule (schedule.hpp: replay) while
// (members × critical-path steps × 3) stays within this budget, and falls back to its closed form
// above. Tests lower it to measure the closed form; returns the previous value.
std::int64_t set_replay_budget(std::int64_t transfers);
// Exact while (steps on the critical path × members) stays within this many transfers.
inline constexpr std::int64_t kExactTransferLimit = 4096;
CollectiveFidelity fidelity_for(CollectiveAlgorithm algorithm, OpKind kind, Bytes bytes, const GroupShape& shape);
// The whole member schedule for an effective algorithm.
Schedule build_schedule(const CollectiveCall& call, CollectiveAlgorithm algorithm, const GroupShape& shape,
                        const TopologyView& topology, bool phase_latency = true);

}  // namespace tandem::sim::collectives

