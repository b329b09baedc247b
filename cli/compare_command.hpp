// `tandem compare PREDICTED MEASURED`: aligns a predicted and a measured trace (Tandem schema)
// op by op and prints the iteration-time error, the error per op kind, rank and stream, both
// critical paths and the largest differences; --json writes the same as JSON.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace tandem::cli {

struct CompareCommandOptions {
  std::string predicted_path;
  std::string measured_path;
  std::string json_path;       // --json: the comparison as JSON ('-' for stdout)
  std::string alignment = "auto";  // --align: auto, by-iteration, mean-iteration
  int measured_warmup = 0;     // --measured-warmup: measured iterations to leave out
  int top = 20;                // --top: how many largest differences to list
};

CLI::App* add_compare_command(CLI::App& app, CompareCommandOptions& options);
int run_compare(const CompareCommandOptions& options);

}  // namespace tandem::cli
