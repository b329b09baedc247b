// Comparing a coarsened simulation (folded replicas, folded tensor groups, ...) with the form it
// coarsens (both simulated by sim_outcome.hpp): iteration time, per-rank breakdown, memory and
// energy within stated tolerances.
#pragma once

#include <gtest/gtest.h>
#include "strategies/hybrid_parallel.hpp"
#include "tests/sim/sim_outcome.hpp"

namespace tandem::sim_test {

// What a hybrid strategy needs to know of each rank's device on `cluster` (ranks 0..world-1).
inline std::vector<RankDevice> devices_of(const Cluster& cluster, int world) {
  std::vector<RankDevice> d;
  for (int r = 0; r < world; ++r) {
    const DeviceProfile& p = cluster.device_of(r);
    d.push_back({p.peak_flops_per_s(DType::bf16), p.memory_capacity_bytes, cluster.locate(r).global_node, p.name});
  }
  return d;
}

// How close a coarsened prediction must be: its iteration time relative to the exact one's, each
// rank's compute / exposed / idle time as a fraction of the exact iteration, energy relative, each
// rank's peak memory relative (0: exact).
struct Tolerance {
  double iteration = 1e-3;
  double per_rank = 1e-2;
  double energy = 1e-2;
  double memory = 0;
};

// Replica folding is exact up to traffic between two ghosts, which on a full-bisection fabric
// shares no link with simulated traffic: the default tolerance. Memory is exact unless said.
inline void expect_same_figures(const Outcome& coarse, const Outcome& exact, int world, Tolerance tol = {}) {
  EXPECT_LT(relative(coarse.iteration_s, exact.iteration_s), tol.iteration)
      << coarse.iteration_s << " coarse vs " << exact.iteration_s << " exact (" << coarse.folding << ")";
  EXPECT_LT(relative(coarse.energy_j, exact.energy_j), tol.energy);
  ASSERT_EQ(coarse.compute_s.size(), exact.compute_s.size());
  for (int r = 0; r < world; ++r) {
    EXPECT_NEAR(coarse.compute_s[r], exact.compute_s[r], tol.per_rank * exact.iteration_s) << "rank " << r;
    EXPECT_NEAR(coarse.exposed_s[r], exact.exposed_s[r], tol.per_rank * exact.iteration_s) << "rank " << r;
    EXPECT_NEAR(coarse.idle_s[r], exact.idle_s[r], tol.per_rank * exact.iteration_s) << "rank " << r;
    if (tol.memory == 0)
      EXPECT_EQ(coarse.peak_bytes[r], exact.peak_bytes[r]) << "rank " << r;
    else
      EXPECT_LE(relative(coarse.peak_bytes[r], exact.peak_bytes[r]), tol.memory) << "rank " << r;
  }
}

// A folded simulation (fewer ranks simulated) against the unfolded one.
inline void expect_same_prediction(const Outcome& coarse, const Outcome& exact, int world, Tolerance tol = {}) {
  EXPECT_LT(coarse.simulated_ranks, world) << coarse.folding;
  EXPECT_EQ(exact.simulated_ranks, world) << exact.folding;
  expect_same_figures(coarse, exact, world, tol);
}

}  // namespace tandem::sim_test
