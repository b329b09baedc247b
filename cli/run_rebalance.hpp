// `tandem run --rebalance-after K`: dynamic re-balancing of batch shares or pipeline layers from
// measured step times (issue 15). The run trains K iterations, then
//   * with data-parallel replicas: measures each replica's compute per sequence (its slowest
//     rank's: a straggler holds its whole replica back) and re-splits the global batch in
//     proportion to the replicas' speeds (batch_split proportional, as the heterogeneity-aware
//     strategies split by peak speeds);
//   * with one pipeline (pipeline stages, no replicas): measures each stage's compute per layer
//     and sequence (its slowest rank's) and re-splits the layers over the stages in proportion to
//     those speeds (pipeline_partition proportional, whole chunks at a time);
// and trains the remaining iterations under the re-split strategy, resumed from a checkpoint of
// the first part (checkpoints hold logical tensors: any strategy resumes them). With replicas
// and stages both, moving layers for one replica's slow stage unbalances the others: the
// simulator weighs re-splitting the batch alone against moving the layers too (each stage's by
// its slowest replica's speed, then the batch by each replica's pipeline after the move), with
// the same slowed ranks, and the faster plan runs. The simulator predicts both parts.
#pragma once

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "exec/cpu/cpu_run.hpp"
#include "scenarios/scenario.hpp"

namespace tandem::cli {

// Each rank's speed as its replica's measured sequences per second of compute (the slowest of the
// replica's ranks): from `roles` (strategy.rank_roles(): replica and sequences per iteration) and
// each rank's compute seconds over `iterations`. Ranks without a replica get the mean speed.
std::vector<double> replica_speeds(const std::vector<RankRole>& roles, const std::vector<double>& compute_s,
                                   int iterations);

// Each rank's speed as its pipeline stage's measured layer-sequences per second of compute (the
// slowest of the stage's ranks): `roles` give stage, layers and sequences per iteration.
std::vector<double> stage_speeds(const std::vector<RankRole>& roles, const std::vector<double>& compute_s,
                                 int iterations);

// Replicas and stages both: the layers per stage in proportion to each stage's slowest per-layer
// speed (whole chunks of `chunks` layers), and each rank's speed for the batch split: its
// replica's sequences per second once the layers moved (its slowest stage's layers over that
// stage's measured per-layer time in this replica).
struct LayersAndBatch {
  std::vector<int> layers_per_stage;
  std::vector<double> speeds;
};
LayersAndBatch split_layers_and_batch(const std::vector<RankRole>& roles, const std::vector<double>& compute_s,
                                      int iterations, int chunks);

// Whether `scenario`'s re-balancing moves layers (one pipeline without replicas, its layers not
// listed by hand) rather than batch shares.
bool rebalances_layers(const Scenario& scenario);

// The scenario's strategy re-split in proportion to `speeds` (one per rank): its layers over the
// stages when rebalances_layers, else its batch over the replicas.
std::unique_ptr<Strategy> rebalanced_strategy(const Scenario& scenario, const std::vector<double>& speeds);

// Predicted iteration times of `scenario`'s strategy as it is and re-split by `speeds`, with
// ranks slowed by `slowdown` (one per rank, 1 = not slowed); each simulated in a child process.
struct RebalancePrediction {
  Seconds before_s = 0, after_s = 0;
};
RebalancePrediction predict_rebalance(const Scenario& scenario, const std::vector<double>& slowdown,
                                      const std::vector<double>& speeds);

// Both parts of a re-balanced run: `options` as for the whole run (iterations, slowdowns, an
// optional final checkpoint), the first `first_part` iterations under `strategy`, the rest under
// the re-split one from a temporary checkpoint (removed). Returns the second part's result (its
// iterations numbered on) with `report` lines saying what was measured, re-split and predicted.
struct RebalancedRun {
  exec::cpu::RunResult before, after;
  std::vector<std::int64_t> micro_batches_before, micro_batches_after;  // per replica
  std::vector<std::int64_t> layers_before, layers_after;                // per stage (layers re-split)
  // Replicas and stages both: the plan the simulator chose ("batch" or "layers and batch") and
  // its prediction of the other one.
  std::string chosen;
  Seconds predicted_other_s = 0;
  RebalancePrediction predicted;
  std::string report;
};
// `run` trains a strategy: exec::cpu::run_cpu (ranks as threads), or with ranks as processes
// under mpirun the processes' runner, in every process alike (each then re-splits the batch by
// the same joined measurements). `job_id` names the temporary checkpoint, the same in all of one
// job's processes (the process id with threads, mpirun's with processes).
using CpuRunner = std::function<exec::cpu::RunResult(const Strategy&, const exec::cpu::RunOptions&)>;
// `live`: where the re-split is said as soon as it is decided (else it opens `report`).
RebalancedRun run_rebalanced(const Scenario& scenario, const Strategy& strategy, const exec::cpu::RunOptions& options,
                             int first_part, const CpuRunner& run, long job_id, std::ostream* live = nullptr);

}  // namespace tandem::cli
