// Replica folding: simulating one data-parallel replica (or a few) and mirroring the rest.
//
// Replicas that run the same program on the same kind of devices, wired the same way, do the
// same thing at the same moments. Only the replicas of one "block" are simulated (a block: the
// fewest replicas whose ranks fill whole nodes, so node-local contention stays simulated); every
// other rank is a ghost that mirrors the simulated rank at the same place in its block. Traffic
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

enum class ReplicaFolding { automatic, off };
const char* to_string(ReplicaFolding folding);
ReplicaFolding parse_replica_folding(const std::string& text);  // "auto", "off"; std::invalid_argument

struct FoldPlan {
  bool active = false;
  int replicas = 1;              // data-parallel replicas of the strategy
  int simulated_replicas = 0;    // replicas in the simulated block
  std::vector<int> mirror_of;    // per rank: the simulated rank it mirrors (itself when simulated)
  std::string note;              // how it folds, or why it does not

  bool simulated(int rank) const { return !active || mirror_of[rank] == rank; }
  int simulated_ranks() const;
};

// Decides whether and how to fold `strategy` on `cluster`. Folding is off when asked, when a
// trace of every rank is recorded, when the strategy's replicas differ, on an oversubscribed
// fabric, or when no block of replicas tiles the cluster with identical devices and wiring.
FoldPlan plan_replica_folding(const Strategy& strategy, const Cluster& cluster, ReplicaFolding mode,
                              bool record_trace);

}  // namespace tandem::sim
