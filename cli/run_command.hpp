// `tandem run SCENARIO --backend cpu`: trains the scenario's strategy for real and measures it.
// Prints loss and throughput per iteration; writes the measured trace (Tandem's trace schema,
// the same op ids as `tandem simulate --trace`) and a JSON summary on request. The cpu
// backend runs on the `localhost` cluster only (CPU cores as devices); any other cluster, or
// another backend, is refused with exit status 2, as is a corrupted, truncated or mismatched
// checkpoint given to --resume. Training that diverges (a NaN or infinite loss) stops every
// rank at that iteration and exits with kExitDiverged, after one line naming the iteration and
// the rank (exec/cpu/diverged.hpp); no output file is written.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "exec/cpu/data.hpp"
#include "scenarios/scenario.hpp"

namespace tandem::cli {

// Exit status of `tandem run` when the loss became NaN or infinite: neither bad input (2: the
// same scenario with a smaller learning rate trains) nor a failure of the machine (1).
inline constexpr int kExitDiverged = 3;

struct RunCommandOptions {
  std::string scenario;
  std::string backend = "cpu";
  std::optional<int> iterations;  // default 10
  std::optional<int> warmup;      // default 0
  std::optional<std::uint64_t> seed;
  std::optional<double> timeout_s;
  std::string trace_path;         // --trace: the measured trace (Tandem schema)
  std::string chrome_trace_path;  // --chrome-trace: a Chrome-trace/Perfetto timeline
  std::string trace_ranks;        // --trace-ranks: the ranks the traces keep ("" all)
  std::string json_path;          // --json: the summary as JSON ('-' for stdout)
  std::string checkpoint_path;    // --checkpoint: save the training state there (atomically)
  std::optional<int> checkpoint_every;  // --checkpoint-every N iterations (and at the end)
  std::string resume_path;        // --resume: continue from a checkpoint
  std::vector<std::string> slow_ranks;  // --slow-rank R:F: rank R's kernels take F times as long
  std::string corpus_path;  // --corpus FILE: a real text to train a language model on (bytes as tokens)
  std::optional<int> rebalance_after;   // --rebalance-after K: re-split the batch by measured speeds
  bool elastic = false;                 // --elastic: ranks as processes under a supervisor (run_elastic.hpp)
  int spares = 0;                       // --spares
  double heartbeat_timeout_s = 30;      // --heartbeat-timeout
  std::string replan = "shrink";        // --replan shrink|search
  int repair_after = 0;                 // --repair-after N (0: never)
};

CLI::App* add_run_command(CLI::App& app, RunCommandOptions& options);

// A real text for a language model (--corpus): refused at the option when it cannot be read, is
// not a regular file, is too large, is shorter than a sequence and its label, or feeds a model
// that reads no text.
std::shared_ptr<const exec::cpu::DataSource> corpus_source(const std::string& path, const Scenario& scenario);
int run_run(const RunCommandOptions& options);

}  // namespace tandem::cli
