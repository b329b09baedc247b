// `tandem simulate SCENARIO`: predicts one scenario and prints (or writes) the prediction.
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>

namespace tandem::cli {

struct SimulateOptions {
  std::string scenario;
  std::string json_path;          // --json: the prediction as JSON ("-" for stdout)
  std::string chrome_trace_path;  // --chrome-trace: Chrome-trace/Perfetto timeline
  std::string trace_path;         // --trace (or --tandem-trace): the trace in Tandem's schema
  std::string trace_ranks;        // --trace-ranks: the ranks the traces keep ("" all)
  std::optional<int> iterations;
  std::optional<int> warmup;
  std::string algorithm;          // overrides the scenario's collective algorithm
  std::string fidelity;           // overrides the scenario's collective fidelity
  std::string compute_fidelity;
  bool free_overlap = false;  // simulation.comm_contention off
  std::string replica_folding;    // auto, off
  std::string tensor_folding;     // auto, off
  std::string pipeline_extrapolation;  // auto, off
};

// Registers the sub-command; `run_simulate` is called with the parsed options.
CLI::App* add_simulate_command(CLI::App& app, SimulateOptions& options);
int run_simulate(const SimulateOptions& options);

}  // namespace tandem::cli
