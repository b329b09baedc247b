// What can be known about a candidate without simulating it, cheaply and for sure:
//
//   memory  each rank's program runs on a runtime that only keeps the memory ledger and frees
//           stream-ordered buffers at once (the simulator frees them later, never earlier), so
//           its peak is a lower bound of the simulated peak: above the device's capacity, the
//           candidate cannot fit.
//   time    each rank's program is replayed on a timeline of its own streams (rank_timeline.hpp):
//           compute ops one after another at the least time the caller's cost function gives
//           (the simulator's own cost model makes the bound tight; the default, the roofline at
//           peak with efficiencies of 1, needs no simulator), communication at the least time
//           its bytes take through the fastest device port of the cluster, every dependency
//           kept, no waiting for peers. The latest host end over ranks is a lower bound of the
//           simulated iteration time. A pipeline (GPipe, 1F1B) adds its fill and drain:
//           micro-batch 0's forward through the stages before a stage, and the last
//           micro-batch's backward back through them.
//   energy  every device draws at least its idle power for that long, and its busy power while
//           its compute runs.
//
// Ranks that run the same program (same pipeline stage, same number of micro-batches) are
// traced once. A compute-only estimate (EstimateDetail::compute) goes further: it needs only each
// rank's compute sums, which do not depend on the order a schedule issues the ops in, so pipeline
// stages holding the same layer counts (and neither or both of the embedding and the head) share
// one trace: a pipeline of 32 uniform stages is traced as 3.
#pragma once

#include <functional>
#include <vector>

#include "common/units.hpp"
#include "platforms/cluster.hpp"
#include "strategies/hybrid_parallel.hpp"
#include "strategies/strategy.hpp"

namespace tandem::search {

struct RankEstimate {
  Bytes peak_memory_bytes = 0;  // lower bound of the simulated peak
  Seconds compute_s = 0;        // lower bound of one iteration's compute on this rank
  Seconds forward_s = 0;        // of which forward ops
  Seconds backward_s = 0;       // of which backward ops (recomputation included)
};

struct AnalyticEstimate {
  std::vector<RankEstimate> ranks;
  Seconds iteration_time_s = 0;    // lower bound: per-rank compute, pipeline fill and drain
  Joules energy_per_iteration_j = 0;  // lower bound
  Bytes peak_memory_bytes = 0;     // the largest per-rank peak
  double memory_fraction = 0;      // the largest per-rank peak / that rank's capacity
  // How big its simulation is: the ops one data-parallel replica's ranks issue in an iteration
  // (the simulator folds identical replicas). A size, not a time: the search's progress turns
  // it into seconds with the rate its first simulations showed.
  double replica_ops = 0;
};

enum class EstimateDetail {
  full,     // memory, per-rank compute and the timeline bound (communication included)
  compute,  // per-rank compute sums only, and the compute part of the bound: no memory, no timeline
};

// The least time a compute op can take on a device. Must never exceed what the simulator charges.
using LeastComputeSeconds = std::function<Seconds(const ComputeOp& op, const DeviceProfile& device)>;

// Launch overhead + max(FLOPs at the better of the dtype's and the fp32 peak, bytes at the memory
// bandwidth): every cost model's roofline with efficiencies of 1 is at least this.
Seconds peak_roofline_seconds(const ComputeOp& op, const DeviceProfile& device);

// The most bytes per second one device can receive: its fabric port and its NIC together, or a
// measured collective's rate (shared-memory nodes), over every node group of the cluster.
BytesPerSecond fastest_port_bytes_per_s(const Cluster& cluster);

AnalyticEstimate estimate_strategy(const Strategy& strategy, const Cluster& cluster,
                                   const LeastComputeSeconds& least_compute = peak_roofline_seconds,
                                   EstimateDetail detail = EstimateDetail::full);

// A cheaper time bound of a hybrid strategy of many micro-batches, from estimates of the same
// strategy with k1 < k2 micro-batches per replica (same layers per stage, even batch): every
// micro-batch after the first issues the same compute ops, so a rank's compute is exactly
// linear in its micro-batches, and its forward and backward parts too. The result holds the
// compute part of the bound only (per-rank compute, pipeline fill and drain; no communication)
// and no memory: a lower bound of estimate_strategy's, for ordering and pruning a large space
// before estimating in full. The short estimates need only be compute estimates (EstimateDetail),
// of `full` itself or of any strategy whose ranks run the same compute ops per micro-batch (the
// evaluator's sketch uses a non-interleaved twin holding the same layers on every rank).
AnalyticEstimate extrapolate_micro_batches(const HybridParallel& full, const Cluster& cluster,
                                           const AnalyticEstimate& at_k1, int k1, const AnalyticEstimate& at_k2, int k2);

}  // namespace tandem::search
