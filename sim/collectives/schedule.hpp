// The one place where a collective algorithm turns into transfers.
//
// An algorithm describes one member's part as phases (executed one after the other); a phase
// is a list of steps on a global step axis (step s of every member is "the same moment" in the
// lockstep form of the algorithm). A step is a set of sends (peer, bytes) and receives (peer).
// Identical consecutive steps are stored once as a StepRun, so a 4096-rank ring all-reduce is
// one run of 8190 steps, not 8190 objects.
//
// Both fidelities execute the same Schedule:
//   exact      — per step: post every receive and send of the step, wait for all, next step.
//                Idle steps (gaps between runs) are not waited for; the data dependencies on
//                the peers' messages make them appear where they belong.
//   aggregated — per phase: one flow per (peer, lane, direction) carrying the edge's bytes summed
//                over all steps, all posted together and waited together; then the member
//                sleeps until the time the lockstep form would end. That time comes from an
//                analytic replay of all members' schedules (`replay`, cached per collective)
//                plus whatever delay the real flows met beyond what the replay expected of
//                them (other traffic); above the replay's budget, from the closed form
//                span · latency + (pace + fill_share · (span − pace)) · τ, τ being the flows'
//                measured transfer time (elapsed − one latency) spread over the `pace_steps`
//                the exact form spreads the bytes over. For a ring on a star both are exactly
//                (steps−1) extra latencies.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/units.hpp"
#include "sim/collectives/collective.hpp"

namespace tandem::sim::collectives {

struct Transfer {
  int peer = 0;      // global rank
  Bytes bytes = 0;   // per step (for receives: what the peer sends; informative)
  int lane = 0;      // distinct edges between the same pair (e.g. the two trees of a double tree)
};

// `count` identical consecutive steps starting at global step `first`.
struct StepRun {
  int first = 0;
  int count = 0;
  std::vector<Transfer> sends;
  std::vector<Transfer> recvs;
};

struct Phase {
  std::vector<StepRun> runs;  // ordered by `first`, not overlapping
  int span = 0;               // last active step + 1 (steps from the phase's start to this member's end)
  int active_steps = 0;       // steps with at least one transfer
  int pace_steps = 0;         // steps over which the exact form spreads the bottleneck's bytes
  Seconds latency = 0;        // one-way latency paid by every step (slowest edge of the phase)
  double fill_share = 1.0;    // closed form: transfer load of the span − pace fill/drain steps,
                              // relative to a steady step
  Seconds step_overhead = 0;  // per step, before its transfers start, beyond the route's latency
                              // (NCCL's per-step protocol latency; nccl_flows.cpp)
};

struct Schedule {
  std::vector<Phase> phases;
};

// Collects one member's transfers of one phase as intervals of global steps and turns them
// into non-overlapping runs of identical steps.
class PhaseBuilder {
 public:
  // A transfer repeated on global steps [first, first + count).
  void send(int first, int count, int peer, Bytes bytes_per_step, int lane = 0);
  void recv(int first, int count, int peer, Bytes bytes_per_step, int lane = 0);
  // latency: per-step latency of the phase (group-wide slowest edge);
  // pace_steps: see Phase; 0 means "this member's active steps".
  Phase build(Seconds latency, int pace_steps = 0, double fill_share = 1.0) const;

 private:
  struct Interval {
    int first, count, peer;
    Bytes bytes;
    bool is_send;
    int lane;
  };
  std::vector<Interval> intervals_;
};

// One member's phase as the analytic replay sees it, all members starting the phase together.
struct PhaseModel {
  Seconds lockstep = 0;  // the exact (lockstep) form's duration
  Seconds flows = 0;     // the aggregated form's flows' duration
};

// Runs one member's schedule from the calling actor. `modeled` (optional, aggregated only): the
// member's phases from `replay`.
void execute(const Schedule& schedule, CollectiveFidelity fidelity, int my_rank, PointToPoint& p2p,
             const std::string& channel, const TopologyView& topology,
             const std::vector<PhaseModel>* modeled = nullptr);

// Replays every member's schedule analytically (no SimGrid), with the TopologyView's figures and
// ports (member, same-node or other-node, direction):
//   lockstep — per global step, a member's step starts when its previous one ended; a transfer
//              starts when both ends have started the step, pays its latency, then queues on its
//              two ports (each serves its transfers in the order they arrive, so the last one
//              ends when it would under fair sharing); a step ends with its last transfer;
//   flows    — the aggregated form: each flow takes its latency plus the phase's bytes through
//              the busier of its two ports over the bandwidth.
// Returns, per group index, one PhaseModel per phase. Cost: O(all transfers of all members).
std::vector<std::vector<PhaseModel>> replay(const std::vector<Schedule>& members, const std::vector<int>& ranks,
                                            const TopologyView& topology);

// Transfers this member posts in the exact form (for tests and fidelity choices).
std::int64_t exact_transfer_count(const Schedule& schedule);

// ---- topology helpers shared by the algorithms and the tuner ----
int node_of(const TopologyView& topology, int rank);
// One-way latency of a transfer from a to b (slower endpoint's figure).
Seconds edge_latency(const TopologyView& topology, int a, int b);
BytesPerSecond edge_bandwidth(const TopologyView& topology, int a, int b);

// Where the members of a group sit: nodes in order of first appearance, members per node in
// group order. `regular` when every node holds the same number of members.
struct GroupShape {
  int size = 0;
  std::vector<int> node_order;                 // distinct nodes, order of first appearance
  std::vector<std::vector<int>> members;       // per node (same order): group indices
  std::vector<int> local_index;                // per group index: position within its node
  std::vector<int> node_slot;                  // per group index: index into node_order
  bool regular = false;
  int per_node = 0;                            // members per node when regular
  // NCCL's view of the members' nodes, when every member has one (the first member's is used).
  std::optional<nccl::Fabric> nccl;
  // Slowest figures among the members.
  Seconds intra_latency = 0, inter_latency = 0;
  BytesPerSecond intra_bandwidth = 0, inter_bandwidth = 0;
  int nodes() const { return static_cast<int>(node_order.size()); }
  bool spans_nodes() const { return node_order.size() > 1; }
};
GroupShape analyze_group(const std::vector<int>& ranks, const TopologyView& topology);

}  // namespace tandem::sim::collectives
