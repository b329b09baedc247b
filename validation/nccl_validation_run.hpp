// The NCCL bus-bandwidth cases (validation/nccl/*.yaml, sim/collectives/nccl_cases.hpp) predicted
// and compared with their published figures: the second table of `tandem validate` and the CI
// test's. Each collective runs as flows on its cluster's SimGrid platform in a child process of
// its own (one SimGrid engine per process), `workers` at a time.
#pragma once

#include <string>
#include <vector>

#include "sim/collectives/nccl_cases.hpp"
#include "validation/validation_run.hpp"

namespace tandem::validation {

struct NcclCaseResult {
  std::string name;
  std::string source;
  bool ok = false;  // the simulation ran; `failure` says why not
  std::string failure;
  std::string algorithm;  // what ran (NCCL's choice when the case says automatic)
  double published_bus_gb_per_s = 0;
  double predicted_bus_gb_per_s = 0;
  double band_pct = 0;
  // (predicted − published) / published bus bandwidth: positive = predicted faster.
  double error() const { return ok ? (predicted_bus_gb_per_s - published_bus_gb_per_s) / published_bus_gb_per_s : 0.0; }
  bool within_band() const;
};

std::vector<NcclCaseResult> run_nccl_cases(const std::vector<sim::NcclCase>& cases, int workers);

// One line per case, then the mean and max |error| (summarize_errors).
std::string format_nccl_table(const std::vector<NcclCaseResult>& results);

}  // namespace tandem::validation
