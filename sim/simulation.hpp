// Simulating a strategy on a modeled cluster: one SimGrid actor per device runs the strategy's
// rank program against the simulated per-rank interface (sim_device.hpp); the result is the
// predicted iteration time, where each rank's time went, peak memory and energy, and optionally
// the predicted trace of every op.
//
// SimGrid holds one engine per process: simulate() may be called once per process.
#pragma once

#include <optional>
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

// Checkpoint writes to a storage system, as SimGrid flows beside (or instead of) training: every
// rank writes its shard from its device's host to the platform's storage host
// (platform_builder.hpp, StorageEndpoint), through its NIC, its node's uplink (and its leaf's) and
// the storage's link, sharing each with the training's own traffic. Multi-node clusters only.
struct StorageWrites {
  BytesPerSecond bandwidth_bytes_per_s = 0;  // the file system's, less other jobs' share
  Seconds latency_s = 0;                     // open/commit, once
  Bytes bytes_per_rank = 0;
  BytesPerSecond rank_rate_cap_bytes_per_s = 0;  // a rank's share of its node's path to storage (0: none)
  // The writes alone, training stopped (a synchronous checkpoint): no rank program runs and the
  // result holds storage_write_s only.
  bool alone = false;
};

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
  // Kernels that overlap an NCCL collective run on the SMs and the HBM bandwidth its kernel leaves
  // (sim/comm_contention.hpp); false: overlap is free.
  bool comm_contention = true;
  // Slowed devices and links (sim/reliability/straggler.hpp). Ranks then differ: no folding.
  std::vector<reliability::Straggler> stragglers;
  // Checkpoint writes during the iterations (an asynchronous checkpoint's background write), or
  // alone. Every device writes, a folded replica's ghosts too; the pipeline is not extrapolated.
  std::optional<StorageWrites> storage_writes;
};

// Where one rank's time went over the measured iterations. compute + exposed_comm + idle equals
// the measured window (first iteration start on any rank to last iteration end on any rank).
struct RankResult {
  Seconds compute_s = 0;       // its compute stream busy
  Seconds exposed_comm_s = 0;  // blocked on communication that was moving data
  Seconds idle_s = 0;          // blocked waiting for peers to arrive, or done early
  Seconds comm_busy_s = 0;     // total time its communication streams were active (overlapped or not)
  Seconds contention_s = 0;    // of compute_s: kernels slowed by NCCL kernels holding SMs and HBM bandwidth
  Bytes peak_memory_bytes = 0;
  MemoryUsage memory_at_peak;
  bool out_of_memory = false;
  Bytes host_peak_bytes = 0;  // what it keeps in its node's host memory (offload), at its peak
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
  // With storage_writes: seconds from the start until every shard is written (+ latency). When
  // the writes outlast the iterations, extrapolated at the rate they had while training ran
  // (what they would take if training went on).
  Seconds storage_write_s = 0;
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
