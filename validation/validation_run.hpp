// Predicts validation cases and compares each with its published figure: the library call behind
// `tandem validate`, the CI test (tests/validation) and the benchmark that prints the table.
// Every case is simulated in a child process of its own (SimGrid keeps one engine per process).
#pragma once

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "validation/validation_case.hpp"

namespace tandem::validation {

struct CaseResult {
  std::string name;
  std::string source;
  int devices = 0;
  std::string device_kind;  // the cluster's device profile name ("A100-SXM-80GB"; kinds joined by "+")
  bool ok = false;        // the simulation ran; `failure` says why not
  std::string failure;
  Seconds published_s = 0;
  Seconds predicted_s = 0;
  double published_tflops_per_gpu = 0;  // counted the publication's way
  double predicted_tflops_per_gpu = 0;
  double band_pct = 0;
  // Where the predicted iteration went on the critical (most-computing) rank, seconds.
  Seconds compute_s = 0;
  Seconds exposed_comm_s = 0;
  Seconds idle_s = 0;  // pipeline bubbles and waiting for peers
  bool out_of_memory = false;
  double wall_s = 0;  // how long the simulation took
  // (predicted − published) / published iteration time: positive = predicted too slow.
  double error() const { return ok ? (predicted_s - published_s) / published_s : 0.0; }
  bool within_band() const;
};

struct Summary {
  int cases = 0;
  int failed = 0;
  double mean_abs_error = 0;  // over the cases that ran
  // The signed mean over the same cases: its bias (negative: predictions too fast on average).
  double mean_error = 0;
  double max_abs_error = 0;
  std::string worst;
};

// Predicts each case, `workers` at a time; results in the order of `cases`.
std::vector<CaseResult> run_cases(const std::vector<ValidationCase>& cases, int workers);
// The mean and max |error| (and the signed mean) over a list of results that ran (`ok`), each with a `name` and an
// `error()`: the training cases' and the NCCL cases' (nccl_validation_run.hpp) alike.
template <class Result>
Summary summarize_errors(const std::vector<Result>& results) {
  Summary s;
  s.cases = static_cast<int>(results.size());
  int ran = 0;
  for (const Result& r : results) {
    if (!r.ok) {
      ++s.failed;
      continue;
    }
    ++ran;
    const double e = std::abs(r.error());
    s.mean_abs_error += e;
    s.mean_error += r.error();
    if (e >= s.max_abs_error) {
      s.max_abs_error = e;
      s.worst = r.name;
    }
  }
  if (ran > 0) {
    s.mean_abs_error /= ran;
    s.mean_error /= ran;
  }
  return s;
}
Summary summarize(const std::vector<CaseResult>& results);
// "N cases, F failed; mean |error| …, max |error| … (worst); mean error …": a summary's line, with
// what the caller calls its cases (the training and NCCL tables, each device kind) and the width
// its count is printed in.
std::string summary_line(const Summary& s, const char* cases, int count_width = 0);
// The same per device kind (what a GPU profile's error is), in order of the kinds' names.
std::vector<std::pair<std::string, Summary>> summarize_by_device(const std::vector<CaseResult>& results);

// The table `tandem validate` prints: one line per case, the mean/max |error| and the same per
// device kind.
std::string format_table(const std::vector<CaseResult>& results);

}  // namespace tandem::validation
