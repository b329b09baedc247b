// What a training job does over days, as events: failures arrive (Poisson, per cause), work since
// the last durable checkpoint is lost, the job waits for spares or repairs, restarts, and
// continues; checkpoints cost time (sync: all of the write; async: the snapshot to host memory,
// the write proceeding in the background until it is durable). The iteration time comes from one
// SimGrid simulation of the configuration (sim/simulation.hpp); this layer only plays the horizon.
//
// One trial is deterministic for its seed. Every failure draws exactly two numbers (the gap to
// it, its cause) whatever happens in between, so trials with different checkpoint intervals see
// the same failures at the same wall-clock times (common random numbers: a sweep compares
// intervals, not luck).
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "common/units.hpp"

namespace tandem::sim::reliability {

// One cause of interruption, scaled to the job (platforms/failure_profile.hpp).
struct FailureStream {
  std::string cause;
  double rate_per_s = 0;  // interruptions per second, for the whole job
  int nodes_taken = 0;    // nodes that leave the job (0: none, the job restarts in place)
  Seconds repair_s = 0;   // until those nodes can serve again
};

enum class RecoveryPolicy {
  restart_on_spares,  // replace the lost nodes from a pool of spares (repaired nodes rejoin it)
  wait_for_repair,    // no spares: wait until the lost nodes are repaired
  shrink,             // continue on the surviving data-parallel replicas, regrow after repair
};
const char* to_string(RecoveryPolicy policy);
RecoveryPolicy parse_recovery_policy(const std::string& text);  // std::invalid_argument

struct CheckpointCost {
  bool asynchronous = false;
  Seconds blocking_s = 0;  // training stops: the whole write (sync), the snapshot (async)
  Seconds write_s = 0;     // until durable after the blocking part (async only; 0 for sync)
};

// A slowdown that comes and goes (a GPU throttling when its rack runs hot, a flapping link):
// episodes start at `episodes_per_s` (Poisson) and last an exponential time of mean `mean_s`;
// while one lasts the job runs at `throughput` of its speed (the failure-free iteration over the
// iteration simulated with that straggler). Several at once: the slowest counts.
// Re-balancing (GoodputModel::rebalance_after_s > 0): that long into an episode the job re-splits
// its work by the devices' speeds and runs at `rebalanced`; that long after the episode ends it
// splits back, running at `after` meanwhile (the healed device given too little).
struct Slowdown {
  std::string what;  // "rank 3: compute x1.50"
  double episodes_per_s = 0;
  Seconds mean_s = 0;
  double throughput = 1;  // (0, 1]
  double rebalanced = 1, after = 1;  // (0, 1], with re-balancing
  // What one re-split stops training for (pipeline layers moving between stages; 0 for batch
  // shares), already charged in `rebalanced` and `after`: the episode's re-split at the start of
  // its re-balanced part (mean length mean_s, memoryless) and the split back at the start of the
  // rebalance_after_s that follow it cost rebalanced x resplit_s / mean_s and
  // after x resplit_s / rebalance_after_s of them, in expectation.
  Seconds resplit_s = 0;
};

struct GoodputModel {
  Seconds iteration_s = 0;  // one failure-free iteration, simulated
  double tokens_per_iteration = 0;
  // Training time between checkpoints. An async write must finish before the next snapshot, so
  // the interval used is max(interval_s, checkpoint.write_s).
  Seconds interval_s = 0;
  CheckpointCost checkpoint;
  Seconds restart_s = 0;  // relaunch + re-initialisation + checkpoint reload + warm-up
  std::vector<FailureStream> failures;
  RecoveryPolicy policy = RecoveryPolicy::restart_on_spares;
  int spare_nodes = 0;          // restart_on_spares
  int replicas = 1;             // shrink: data-parallel replicas
  int replicas_per_node = 1;    // shrink: replicas a lost node takes down (at least 1)
  // Shrink: the job's throughput with a replicas alive over its full-width throughput, index a
  // (0..replicas; 1 at full width), as the survivors' own simulated iteration says (they share
  // the global batch); empty: a / replicas.
  std::vector<double> shrunk_throughput;
  std::vector<Slowdown> slowdowns;  // transient stragglers; their episodes draw from a stream of their own
  Seconds rebalance_after_s = 0;    // 0: never re-balanced

  Seconds effective_interval_s() const;
  double total_failure_rate_per_s() const;
  // The share of its speed the job keeps through the slowdowns' episodes, in closed form (what
  // run_trial plays): an episode of mean length m, its gaps of mean 1 / episodes_per_s, costs
  // (1 - throughput) of its length; re-balanced after R, (1 - throughput) of its first min(L, R),
  // (1 - rebalanced) of the rest, and, when it lasted past R, (1 - after) of the R after it
  // (expectations over the exponential length L). Rare episodes: their costs add.
  double episode_throughput() const;
};

// Where the wall-clock time of one trial went. The parts sum to the trial's duration.
struct GoodputTally {
  Seconds duration_s = 0;
  Seconds useful_s = 0;      // training whose result survived (full-width equivalent)
  Seconds degraded_s = 0;    // running shrunk: the share of time the missing replicas would have used
  Seconds slowed_s = 0;      // running through a slowdown episode: the share of time it took
  Seconds checkpoint_s = 0;  // blocking checkpoint time
  std::vector<Seconds> lost_by_cause;     // training since the last durable checkpoint, redone
  std::vector<Seconds> restart_by_cause;  // relaunch, re-init, reload, warm-up
  std::vector<Seconds> waiting_by_cause;  // for spares or repairs
  Seconds regrow_s = 0;      // shrink: restarting at full width after a repair
  int failures = 0;
  bool reached_target = false;

  Seconds accounted_s() const;  // the sum of every part (equals duration_s)
  double goodput() const { return duration_s > 0 ? useful_s / duration_s : 0; }
};

// One step of a trial's timeline: from `t_s` on, the job is in `state` ("running", "waiting",
// "restarting", "regrowing") at `throughput` of its full-width, unslowed speed (0 unless running;
// checkpoints' pauses are not steps), with `failures` so far.
struct TimelinePoint {
  Seconds t_s = 0;
  std::string state;
  double throughput = 0;
  int failures = 0;
};

// Plays one trial from t = 0 (the job just started) until `horizon_s`, or until the useful work
// reaches `target_s` of failure-free training (then duration_s is the time it took). With
// `timeline`, also its steps (at most `max_points`: the first ones).
GoodputTally run_trial(const GoodputModel& model, Seconds horizon_s, std::uint64_t seed,
                       Seconds target_s = std::numeric_limits<double>::infinity(),
                       std::vector<TimelinePoint>* timeline = nullptr, std::size_t max_points = 0);

// Checks a model before playing it (std::invalid_argument naming the field).
void validate(const GoodputModel& model);

}  // namespace tandem::sim::reliability
