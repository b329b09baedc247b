// `tandem goodput SCENARIO --horizon 7d --seed N`: simulates the scenario's failure-free iteration
// once (SimGrid, stragglers included), then plays the horizon as a seeded Monte Carlo of failures,
// checkpoints and restarts (sim/reliability/): goodput, effective tokens/s, time lost by cause,
// the checkpoint interval found by sweep against Young/Daly, and the time to train N tokens with
// its confidence interval. The scenario needs a `reliability:` section (scenarios/reliability_spec.hpp).
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace tandem::cli {

struct GoodputOptions {
  std::string scenario;
  std::string horizon;     // overrides the scenario's (7d, 12h, ...)
  std::uint64_t seed = 1;  // the Monte Carlo's and the drawn stragglers'
  std::optional<int> trials;
  std::optional<double> tokens;  // overrides reliability.target_tokens
  std::string interval;          // overrides reliability.checkpoint.interval (a duration or auto)
  int sweep_points = 17;
  std::string json_path;  // --json FILE ('-' for stdout)
};

CLI::App* add_goodput_command(CLI::App& app, GoodputOptions& options);
int run_goodput(const GoodputOptions& options);

}  // namespace tandem::cli
