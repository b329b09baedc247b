// Simulating a strategy on a modeled cluster: one SimGrid actor per device runs the strategy's
// rank program against the simulated per-rank interface (sim_device.hpp); the result is the
// predicted iteration time, where each rank's time went, peak memory and energy, and optionally
// the predicted trace of every op.
//
// SimGrid holds one engine per process: simulate() may be called once per process.
#pragma once

#include <string>
#include <vector>

#include "analysis/trace.hpp"
#include "common/units.hpp"
#include "platforms/cluster.hpp"
#include "sim/collectives/collective.hpp"
#include "sim/reliability/straggler.hpp"
#include "sim/replica_folding.hpp"
#include "strategies/memory_ledger.hpp"
#include "strategies/strategy.hpp"

namespace tandem::sim {

// How compute ops are realised in SimGrid. `fused` merges the consecutive compute ops a rank
// issues between two synchronisation points into one execution: exact with one compute stream
// (the ops run back to back anyway) and much cheaper; `per_op` executes each op on its own.
enum class ComputeFidelity { per_op, fused };
const char* to_string(ComputeFidelity fidelity);
ComputeFidelity parse_compute_fidelity(const std::string& text);

struct SimulationOptions {
  int warmup_iterations = 0;
  int iterations = 1;  // measured
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::automatic;
  CollectiveFidelity collective_fidelity = CollectiveFidelity::automatic;
  ComputeFidelity compute_fidelity = ComputeFidelity::fused;
  ReplicaFolding replica_folding = ReplicaFolding::automatic;  // see replica_folding.hpp
  FoldingMode tensor_folding = FoldingMode::automatic;         // see tensor_folding.hpp
  FoldingMode pipeline_extrapolation = FoldingMode::automatic; // see pipeline_extrapolation.hpp
  bool record_trace = false;
  // Slowed devices and links (sim/reliability/straggler.hpp). Ranks then differ: no folding.
  std::vector<reliability::Straggler> stragglers;
};

// Where one rank's time went over the measured iterations. compute + exposed_comm + idle equals
// the measured window (first iteration start on any rank to last iteration end on any rank).
struct RankResult {
  Seconds compute_s = 0;       // its compute stream busy
  Seconds exposed_comm_s = 0;  // blocked on communication that was moving data
  Seconds idle_s = 0;          // blocked waiting for peers to arrive, or done early
  Seconds comm_busy_s = 0;     // total time its communication streams were active (overlapped or not)
  Bytes peak_memory_bytes = 0;
  MemoryUsage memory_at_peak;
  bool out_of_memory = false;
  Joules energy_j = 0;  // over the whole simulated run
};

struct SimulationResult {
  Seconds iteration_time_s = 0;            // mean of the measured iterations
  std::vector<Seconds> iteration_times_s;  // each measured iteration
  std::vector<RankResult> ranks;
  Joules energy_per_iteration_j = 0;
  std::size_t compute_executions = 0;  // SimGrid executions (after fusion)
  std::size_t compute_ops = 0;         // ops issued by the strategy
  std::size_t comm_ops = 0;
  double wall_time_s = 0;  // how long the simulation itself took
  int simulated_ranks = 0;  // ranks run by an actor (fewer than the world when replicas are folded)
  std::string folding;      // how replicas and tensor groups were folded, or why not
  Trace trace;             // filled when record_trace
};

// Runs the whole simulation in this process (or, with pipeline extrapolation, in two child
// processes that simulate shorter iterations). Throws std::runtime_error naming the rank and op if a
// rank program fails or the ranks deadlock (mismatched communication).
SimulationResult simulate(const Strategy& strategy, const Cluster& cluster,
                          const SimulationOptions& options);

// Makes sure the simulator is loaded in this process. The `tandem` binary does not link SimGrid
// (its start-up would cost every command, --help included, some 60 ms and 30 MB): simulate() there
// opens libtandem_simgrid.so beside the binary on first use (sim/module/). A command that forks
// workers to simulate calls this first, so that they inherit it instead of each loading it.
// Tests and benchmarks link the simulator itself, and this does nothing.
void load_simulator();

}  // namespace tandem::sim
