// What can be known about a candidate without simulating it, cheaply and for sure:
//
//   memory  each rank's program runs on a runtime that only keeps the memory ledger and frees
//           stream-ordered buffers at once (the simulator frees them later, never earlier), so
//           its peak is a lower bound of the simulated peak: above the device's capacity, the
//           candidate cannot fit.
//   time    a rank's compute stream runs its ops one after another, each costing at least its
//           launch overhead plus max(FLOPs / peak, bytes / memory bandwidth) (the cost
//           model's roofline with efficiencies of 1), and all of it lies inside the iteration:
//           the largest per-rank sum is a lower bound of the simulated iteration time. A
//           pipeline (GPipe, 1F1B) adds its fill and drain: micro-batch 0's forward through the
//           stages before a stage, and the last micro-batch's backward back through them.
//   energy  every device draws at least its idle power for that long, and its busy power while
//           its compute runs.
//
// Ranks that run the same program (same pipeline stage, same number of micro-batches) are
// traced once.
#pragma once

#include <vector>

#include "common/units.hpp"
#include "platforms/cluster.hpp"
#include "strategies/strategy.hpp"

namespace tandem::search {

struct RankEstimate {
  Bytes peak_memory_bytes = 0;  // lower bound of the simulated peak
  Seconds compute_s = 0;        // lower bound of one iteration's compute on this rank
};

struct AnalyticEstimate {
  std::vector<RankEstimate> ranks;
  Seconds iteration_time_s = 0;    // lower bound: per-rank compute, pipeline fill and drain
  Joules energy_per_iteration_j = 0;  // lower bound
  Bytes peak_memory_bytes = 0;     // the largest per-rank peak
  double memory_fraction = 0;      // the largest per-rank peak / that rank's capacity
};

AnalyticEstimate estimate_strategy(const Strategy& strategy, const Cluster& cluster);

}  // namespace tandem::search
