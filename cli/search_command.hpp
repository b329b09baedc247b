// `tandem search SCENARIO`: explores the scenario's `search:` space in the simulator and reports
// the best strategies for an objective (scenarios/search_spec.hpp for the space).
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>

namespace tandem::cli {

struct SearchOptions {
  std::string scenario;
  int workers = 0;  // 0: one per core
  std::optional<int> top_k;
  std::string objective;   // overrides the scenario's
  std::string algorithm;   // overrides the scenario's
  std::optional<int> max_evaluations;
  std::string json_path;    // --json: the report as JSON ("-" for stdout)
  std::string winner_path;  // --winner: the winner as a scenario file
  bool mpi = false;         // --mpi: simulate on MPI ranks 1..N-1 (builds with MPI only)
};

CLI::App* add_search_command(CLI::App& app, SearchOptions& options);
int run_search_command(const SearchOptions& options);

}  // namespace tandem::cli
