// `tandem convergence SCENARIO --corpus FILE`: convergence measured for any small scenario. Each
// variant of its strategy (synchronous, gradient codecs, local SGD, parameter servers: what changes
// the maths of a step) trains for real on the CPU backend on a real text, and the loss per step of
// each is written as a convergence file (scenarios/convergence_table.hpp), the one a search's
// `convergence:` reads to rank plans by time to a target loss. What validation/convergence/measure.sh
// does for gpt-tiny, for the scenario given.
//
// Variants: `--variant NAME=FIELDS` (FIELDS: strategy fields as a convergence file writes them,
// "gradient_compression: int8"; empty: the scenario's own strategy), repeatable; by default, for a
// data-parallel scenario, synchronous, int8, onebit, local_sgd_4, ps_stale_0, ps_stale_1 and ps_async (one
// server beside the workers). Target loss: --target-loss, else what the synchronous variant
// reaches over its last 5 steps (the first variant when none is synchronous).
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <vector>

namespace tandem::cli {

struct ConvergenceOptions {
  std::string scenario;
  std::string corpus_path = "/usr/share/common-licenses/GPL-3";  // on every Debian machine
  int steps = 80;
  std::optional<double> target_loss;
  std::vector<std::string> variants;  // NAME=FIELDS
  std::string json_path;              // the convergence file ('-' for stdout)
};

CLI::App* add_convergence_command(CLI::App& app, ConvergenceOptions& options);
int run_convergence(const ConvergenceOptions& options);

}  // namespace tandem::cli
