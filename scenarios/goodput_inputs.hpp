// What `tandem goodput` plays over the horizon, built from a reliability scenario and the one
// simulation of its failure-free iteration: the job's failure streams (its devices, nodes and
// leaf switches), the checkpoint's size and costs through the modeled storage, the restart's cost.
#pragma once

#include <optional>

#include "scenarios/reliability_spec.hpp"
#include "sim/reliability/failure_streams.hpp"
#include "sim/reliability/goodput_model.hpp"
#include "sim/simulation.hpp"

namespace tandem {

// The checkpoint's traffic simulated in SimGrid (sim/storage_traffic.hpp) instead of the closed
// form: through the cluster's own network (NICs, uplinks, an oversubscribed spine) into the
// storage's link, and, for an asynchronous checkpoint, beside the training it shares them with.
struct SimulatedStorage {
  Seconds write_s = 0;             // the writes alone (training stopped): sync, and the reload
  Seconds write_beside_s = 0;      // async: the writes while training runs
  Seconds iteration_beside_s = 0;  // async: the measured iterations' mean, the writes starting with them
  int iterations_beside = 0;       // async: how many were measured
};

struct GoodputSetup {
  sim::reliability::GoodputModel model;  // interval_s: the scenario's, or 0 when it is to be swept
  sim::reliability::JobShape job;
  Bytes checkpoint_bytes = 0;
  Bytes snapshot_bytes_per_device = 0;  // the largest rank's parameters + optimizer state
  Seconds write_s = 0;                  // the whole checkpoint to storage
  Seconds reload_s = 0;                 // and back, on restart
  Seconds snapshot_s = 0;               // async: device -> host memory
  BytesPerSecond per_node_bytes_per_s = 0;
  bool storage_simulated = false;  // write_s and reload_s from SimGrid (SimulatedStorage)
  // Async with simulated storage: training time the background write's traffic costs (its length
  // x the iteration's slowdown beside it), charged with the snapshot as blocking time.
  Seconds contention_s = 0;
};

// The devices, nodes and leaf switches ranks 0..world-1 of the cluster occupy.
sim::reliability::JobShape job_shape(const Cluster& cluster, int world);

// What a checkpoint of one device holds: its parameters and optimizer state (at its peak).
Bytes snapshot_bytes(const MemoryUsage& at_peak);

GoodputSetup goodput_setup(const ReliabilityScenario& scenario, const Strategy& strategy,
                           const sim::SimulationResult& iteration, const SimulatedStorage* storage = nullptr);
// The same from the iteration's time and the largest rank's parameters + optimizer state (what an
// asynchronous checkpoint snapshots), as a search's evaluation keeps them.
GoodputSetup goodput_setup(const ReliabilityScenario& scenario, const Strategy& strategy, Seconds iteration_s,
                           Bytes snapshot_bytes_per_device, const SimulatedStorage* storage = nullptr);

// Simulates the checkpoint's writes (each in a child process: call before this process simulates):
// alone, and for an asynchronous checkpoint beside the iterations of `options`. Every rank writes
// an equal shard of the checkpoint; the storage link carries the aggregate less the background
// load, and a per-node path given in the scenario caps each rank at its share of it. Nothing for
// a single-node job (its one path is the closed form's).
std::optional<SimulatedStorage> simulate_storage(const ReliabilityScenario& scenario, const Strategy& strategy,
                                                 const sim::SimulationOptions& options);

// What the search weighs a candidate by (search::Objective::time_to_train), in closed form:
// Daly's expected goodput (sim/reliability/checkpoint_interval.hpp) for Poisson interruptions at
// the job's total rate on the devices, nodes and leaf switches it uses, its blocking checkpoint
// cost and its restart cost, at the scenario's checkpoint interval or, with `interval: auto`,
// Daly's optimum. It restarts in place: waiting for spares or repairs and the shrink policy are
// left to `tandem goodput`'s Monte Carlo, which agrees with it within 2% where its assumptions
// hold (tests/sim/reliability/goodput_model_test.cpp). Transient stragglers' episodes
// (model.slowdowns, re-balanced or not) scale it by GoodputModel::episode_throughput.
struct ExpectedGoodput {
  double goodput = 1;
  Seconds mtbf_s = 0;        // 0: nothing fails
  Seconds interval_s = 0;    // of training between checkpoints (0: none needed)
  Seconds checkpoint_s = 0;  // blocking part of one checkpoint
  Seconds restart_s = 0;     // one restart (async: with the unfinished write's work)
  double episode_throughput = 1;  // share of its speed the job keeps through slowdown episodes
};
ExpectedGoodput expected_goodput(const GoodputSetup& setup);

// Shrink policy: what the survivors of a data-parallel job run at, re-planned. With a of its R
// replicas alive, the job keeps its layout (tensor x context x pipeline per replica) and its
// global batch, shared over the a replicas (split as evenly as the micro-batches go), at the
// fastest of the scenario's micro-batch size and its halves; each plan is simulated (without
// stragglers, as is the full width it is compared with) for the `simulated` largest a < R; below
// them throughput falls in proportion to the replicas from the smallest simulated. Returns
// GoodputModel::shrunk_throughput (index a, 1 at a = R).
std::vector<double> shrunk_throughput(const Scenario& base, const sim::SimulationOptions& options, int simulated);

// The scenario's transient stragglers (episodes) as GoodputModel::slowdowns: the iteration as
// `options` has it (its permanent stragglers), and for each transient one the iteration with it
// slowing the job as well, each simulated once in a child process of its own; an episode runs the
// job at the first over the second. Straggler k's rank and range draw from `seed`'s k-th sub-stream.
// With re-balancing (rebalance_after_s > 0), also the iterations with the batch shares (and a
// pipeline's layers) split by the devices' peak speeds over their slowdowns in the episode: with
// the straggler (re-balanced) and without it (after the episode, before splitting back), less
// what moving a pipeline's layers stops training for (Slowdown::resplit_s, layer_resplit.hpp).
std::vector<sim::reliability::Slowdown> transient_slowdowns(const Scenario& base, const sim::SimulationOptions& options,
                                                            std::uint64_t seed, Seconds rebalance_after_s);

}  // namespace tandem
