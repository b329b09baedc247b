#include "validation/nccl_validation_run.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "common/process_pool.hpp"
#include "sim/collectives/collective_benchmark.hpp"
#include "sim/simulation.hpp"

namespace tandem::validation {

namespace {

// Runs in the child: the simulated nccl-tests, handed back as "busbw_GB/s algorithm".
std::string predict(const sim::NcclCase& c) {
  const sim::CollectiveBenchmark b =
      sim::benchmark_collective(c.load_cluster(), c.collective, c.bytes, c.group_size, c.algorithm);
  std::ostringstream out;
  out.precision(17);
  out << b.bus_bytes_per_s / 1e9 << ' ' << to_string(b.algorithm);
  return out.str();
}

}  // namespace

bool NcclCaseResult::within_band() const { return ok && std::abs(error()) * 100 <= band_pct; }

std::vector<NcclCaseResult> run_nccl_cases(const std::vector<sim::NcclCase>& cases, int workers) {
  sim::load_simulator();  // once here, not in every worker
  const auto outcomes =
      run_in_processes(cases.size(), [&](std::size_t i) { return predict(cases[i]); }, std::max(1, workers));
  std::vector<NcclCaseResult> results;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const sim::NcclCase& c = cases[i];
    NcclCaseResult r;
    r.name = c.name;
    r.source = c.source;
    r.published_bus_gb_per_s = c.published_bus_gb_per_s;
    r.band_pct = c.band_pct;
    r.ok = outcomes[i].ok;
    r.failure = outcomes[i].error;
    if (r.ok) {
      std::istringstream in(outcomes[i].output);
      in >> r.predicted_bus_gb_per_s >> r.algorithm;
    }
    results.push_back(std::move(r));
  }
  return results;
}

std::string format_nccl_table(const std::vector<NcclCaseResult>& results) {
  std::string out;
  char row[512];
  std::snprintf(row, sizeof row, "%-34s %-6s %12s %12s %8s  %s\n", "NCCL case", "algo", "published", "predicted",
                "error", "source");
  out += row;
  for (const NcclCaseResult& r : results) {
    if (!r.ok) {
      std::snprintf(row, sizeof row, "%-34s FAILED: %s\n", r.name.c_str(), r.failure.c_str());
      out += row;
      continue;
    }
    std::snprintf(row, sizeof row, "%-34s %-6s %7.1f GB/s %7.1f GB/s %+7.1f%%  %.60s%s\n", r.name.c_str(),
                  r.algorithm.c_str(), r.published_bus_gb_per_s, r.predicted_bus_gb_per_s, 100 * r.error(),
                  r.source.c_str(), r.within_band() ? "" : "  [outside its band]");
    out += row;
  }
  out += "\n" + summary_line(summarize_errors(results), "NCCL cases") + "\n";
  return out;
}

}  // namespace tandem::validation
