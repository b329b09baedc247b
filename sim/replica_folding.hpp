// Replica folding: simulating one data-parallel replica (or a few) and mirroring the rest.
//
// Replicas that run the same program (the same work) on the same kind of devices, wired the same
// way, do the same thing at the same moments. Replicas are cut into blocks of consecutive ones
// that own whole nodes (so node-local contention stays simulated); when every block is a twin of
// the first, only the first is simulated, and every rank of another block is a ghost that mirrors
// the rank at its place in the first. Ghosts send and receive from their own hosts, as soon as
// the rank they mirror reaches the collective. Traffic
// between a simulated rank and a ghost still flows on the ghost's real links (a host-to-host
// transfer, since no actor runs there), so the simulated ranks feel their real collectives'
// latency, bandwidth and contention; what is not simulated is traffic between two ghosts, which
// can only matter where it shares a bottleneck with simulated traffic, so folding is refused on
// an oversubscribed fabric. tests/sim/replica_folding_test.cpp measures folded against unfolded.
#pragma once

#include <string>
#include <vector>

#include "platforms/cluster.hpp"
#include "strategies/strategy.hpp"

namespace tandem::sim {

// Whether a folding (of replicas here, of tensor groups in tensor_folding.hpp) may be used.
enum class FoldingMode { automatic, off };
using ReplicaFolding = FoldingMode;
const char* to_string(FoldingMode folding);
FoldingMode parse_folding_mode(const std::string& text);  // "auto", "off"; std::invalid_argument
inline FoldingMode parse_replica_folding(const std::string& text) { return parse_folding_mode(text); }

struct FoldPlan {
  bool active = false;
  int replicas = 1;              // data-parallel replicas of the strategy
  int simulated_replicas = 0;    // replicas in the simulated block
  std::vector<int> mirror_of;    // per rank: the simulated rank it mirrors (itself when simulated)
  std::string note;              // how it folds, or why it does not
  // Tensor folding (tensor_folding.hpp): per rank, the leader of its tensor group when groups are
  // folded (a group's collectives are then priced alone: nothing else uses its links), else empty.
  std::vector<int> tensor_leader_of;
  int tensor_group_size = 1;
  std::string tensor_note;

  bool simulated(int rank) const { return !active || mirror_of[rank] == rank; }
  int simulated_ranks() const;
};

// Decides whether and how to fold `strategy` on `cluster`. Folding is off when asked, when a
// trace of every rank is recorded, on an oversubscribed fabric or shared cores, or when no block
// size has a twin block to mirror.
FoldPlan plan_replica_folding(const Strategy& strategy, const Cluster& cluster, ReplicaFolding mode,
                              bool record_trace);

}  // namespace tandem::sim
