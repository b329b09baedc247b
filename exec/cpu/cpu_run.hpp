// Training a strategy for real on this machine's CPU: the driver of the CPU backend.
//
// run_cpu() gives every rank of the strategy a CpuDevice (cpu_device.hpp) and a thread that runs
// the rank's RankProgram as the simulator does: setup once, then for each iteration
// begin_iteration / train_step / end_iteration. It returns per-iteration loss, time and
// throughput, each rank's peak memory and busy times, the measured trace (analysis/trace.hpp,
// source "cpu", the same op ids as the simulator's trace) and, on request, the final
// parameters. A failure on any rank aborts all of them and run_cpu throws ONE RunError:
// "rank 1 failed in op mb0.layer0.attn.qkv.fwd: ...".
//
// Loss of an iteration: the mean over the global batch's micro-batches of each micro-batch's
// loss (the scalar the model's loss-mean op writes), each micro-batch counted once however many
// ranks computed it (tensor-parallel ranks all do).
//
// Data: see data.hpp. Rank r's micro-batch k is the global micro-batch offset_r + k; for a
// DataParallel strategy offset_r is the number of micro-batches of the replicas before r (so any
// data-parallel degree trains on the same global batch); other strategies pass
// RunOptions::micro_batch_offset (default 0 for every rank: every rank sees the same batch, right
// for pure tensor or pipeline parallelism).
//
// BLAS: each rank is one core (OpenBLAS is set to `blas_threads` threads, default 1), as the
// localhost cluster models CPU cores as devices.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/trace.hpp"
#include "exec/cpu/checkpoint.hpp"
#include "exec/cpu/data.hpp"
#include "kernels/cpu/moe.hpp"
#include "strategies/memory_ledger.hpp"
#include "strategies/strategy.hpp"

namespace tandem::exec::cpu {

struct IterationStats {
  int iteration = 0;
  bool warmup = false;
  double loss = 0;              // NaN when the strategy computed no loss
  std::int64_t micro_batches = 0;  // distinct micro-batches whose loss was seen
  // From the previous iteration's end (the last rank's) to this one's (the first iteration: from
  // the first rank's start): the period training advances by. Not this iteration's own window
  // (first rank's start to last rank's end): ranks that take turns on shared cores
  // (core_gate.hpp) start an iteration at staggered times, each half a turn after the other,
  // so windows overlap and their lengths overstate the time per iteration. Where every rank
  // starts together (the simulator's symmetric ranks), both are the same.
  Seconds time_s = 0;
  double tokens_per_s = 0;
  Seconds kernels_s = 0;  // all ranks' kernel time in this iteration (compute ops on host threads)
  std::vector<Seconds> rank_kernels_s;  // each rank's part of it (run's live straggler watch)
};

struct RankStats {
  Bytes peak_memory_bytes = 0;
  MemoryUsage memory_at_peak;
  Seconds compute_s = 0;    // kernels on the host thread
  Seconds comm_busy_s = 0;  // communication ops from start to end (all streams)
  std::size_t compute_ops = 0, comm_ops = 0;
};

struct RunResult {
  std::string strategy;
  int world_size = 0;
  std::vector<IterationStats> iterations;  // warm-up ones included (flagged)
  int first_iteration = 0;                 // > 0 when resumed from a checkpoint
  Seconds iteration_time_s = 0;            // mean over measured iterations
  double tokens_per_s = 0;                 // measured tokens / measured time
  std::int64_t tokens_per_iteration = 0;
  std::vector<RankStats> ranks;
  // Mixture-of-experts models: the busiest expert's load over the mean, per forward routing of
  // every rank (what model.moe_router_load_imbalance prices dropless routing with).
  kernels::cpu::RouterLoad router_load;
  Trace trace;  // source "cpu"; empty unless record_trace
  double wall_time_s = 0;
  // Final parameters by name, per rank (when capture_parameters).
  std::vector<std::map<std::string, std::vector<float>>> parameters;
  // The same as logical tensors, assembled from every rank's parts (global_state.hpp): what
  // runs under different strategies are compared on.
  std::map<std::string, std::vector<float>> global_parameters;
};

class RunError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct RunOptions {
  int iterations = 1;
  int warmup_iterations = 0;  // run first, excluded from the averages
  std::uint64_t seed = 1234;  // initial parameters and dropout
  float init_std = 0.02f;
  float hidden_dropout = 0.0f;  // set from the model (configure_for_model)
  float attention_dropout = 0.0f;
  std::shared_ptr<const DataSource> data;  // required (configure_for_model sets it)
  std::int64_t seq_length = 1;             // tokens per sequence, for throughput
  std::function<std::int64_t(int rank)> micro_batch_offset;  // see the header comment
  bool record_trace = true;
  bool capture_parameters = false;
  int blas_threads = 1;
  double timeout_s = 60;  // any blocking wait longer than this fails the run
  // Checkpoints (checkpoint.hpp): with `checkpoint_path`, the full training state is saved
  // there atomically every `checkpoint_every` iterations (0: never mid-run) and at the end of a
  // successful run. With `resume_path`, the run continues from that checkpoint: iterations are
  // numbered on from its next_iteration, and `iterations` more are run. Any strategy may resume
  // it (checkpoints hold logical tensors) as long as the model, precision (fp32 masters or
  // not), seed and global batch are the same: otherwise an InputError.
  std::string checkpoint_path;
  int checkpoint_every = 0;
  std::string resume_path;
  // Failure injection (tests): rank `fail_rank` throws when it executes op `fail_op` (in
  // iteration `fail_iteration`, or any when -1).
  int fail_rank = -1;
  std::string fail_op;
  int fail_iteration = -1;
  // Straggler injection: rank r's kernels take compute_slowdown[r] times as long (>= 1; the rank
  // keeps its core busy for the extra time, as a slower device would be). Empty: none.
  std::vector<double> compute_slowdown;
  // Called once per iteration as soon as every rank has finished it (from a rank thread).
  std::function<void(const IterationStats&)> on_iteration;
};

// Data source, dropout probabilities and sequence length from the model (a TransformerModel or
// an MlpModel) and its training sequence length.
void configure_for_model(RunOptions& options, const Model& model, std::int64_t seq_length);

// Global micro-batch offset of each rank's micro-batch 0 (see the header comment): from
// RunOptions::micro_batch_offset when set, else from the data-parallel layout of the strategy.
std::vector<std::int64_t> micro_batch_offsets(const Strategy& strategy, const RunOptions& options);
// The settings every backend's devices take from the run's options.
TrainingSettings training_settings(const Strategy& strategy, const RunOptions& options);

// What a checkpoint holds: the parameters and optimizer state (weights, fp32 masters, AdamW
// moments); the rest is recomputed or zeroed every step (checkpoint.hpp).
inline const std::set<MemCategory> kTrainingState{MemCategory::parameters, MemCategory::optimizer_state,
                                                  MemCategory::host_optimizer_state};
// A checkpoint of this run after `next_iteration` iterations holding `tensors` (global form).
Checkpoint checkpoint_of(const Strategy& strategy, const RunOptions& options, int next_iteration,
                         std::map<std::string, std::vector<float>> tensors);
// options.resume_path loaded and checked against this run (its global batch and seed): an
// InputError naming the file otherwise.
Checkpoint load_resume_checkpoint(const Strategy& strategy, const RunOptions& options);

// Trains `strategy` for real. Throws RunError when a rank fails (after all ranks stopped),
// std::invalid_argument for bad options.
RunResult run_cpu(const Strategy& strategy, const RunOptions& options);

// iteration_time_s and tokens_per_s of a result from its measured (not warm-up) iterations.
void set_measured_rates(RunResult& result);

nlohmann::json to_json(const RunResult& result);

}  // namespace tandem::exec::cpu
