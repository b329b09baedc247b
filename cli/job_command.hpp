// `tandem job`: the main job, end to end, on bundled defaults (what `./build.sh run` runs).
//
//   A. a modeled heterogeneous cluster: search the best way to train a model on it, simulate the
//      winner, and write a report (ranked strategies, Pareto front, the winner's breakdown);
//   B. this machine: calibrate its profile if none was measured here, search the best strategy
//      for a small model on its cores, run the winner for real on the CPU backend, simulate it,
//      compare prediction and measurement op by op, and write a report.
//
// Each step is the library call behind its sub-command (search, simulate, run, calibrate,
// compare, report), in a child process of its own; the commands' text goes to a log per step in
// the output folder, progress and errors to the terminal. The reports' paths are printed last.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace tandem::cli {

struct JobOptions {
  std::string out_dir = "tandem-job";                      // -o: where every result goes
  std::string cluster_search = "search-gpt3-13b-mixed";    // part A's search scenario
  std::string local_search = "search-gpt-tiny-localhost";  // part B's search scenario
  // Part B: measured iterations of the winner. 100, not 20: on a 2-core VM the mean of 20 gpt-tiny
  // iterations (0.1 s) swung 4.8-6.8 ms over three runs in a row, 100 iterations 4.6-5.1 ms, while
  // five calibrations in a row predicted 4.3-4.55 ms (2026-12-04): the short run was the noise.
  int run_iterations = 100;
  int workers = 0;          // search workers (0: one per core)
  bool skip_cluster = false;
  bool skip_local = false;
  bool recalibrate = false;  // part B: calibrate even if a profile of this machine exists
};

CLI::App* add_job_command(CLI::App& app, JobOptions& options);
int run_job(const JobOptions& options);

}  // namespace tandem::cli
