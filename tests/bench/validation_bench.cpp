// The validation suite as a benchmark (issue 14's check "a benchmark prints the whole table with
// mean/max"): every bundled training case (validation/cases) and every NCCL bus-bandwidth case
// (validation/nccl) predicted once, both tables printed to stderr, their errors as counters. The
// timing is what predicting the whole suite costs on this machine; the accuracy figures do not
// depend on it. Cases this machine cannot simulate (memory) are listed as failed, as `validate`
// lists them. Counters:
//   cases, failed          training cases, and those not simulated here
//   mean_abs_error_pct     over the training cases that ran; max_abs_error_pct likewise
//   mean_error_pct         their signed mean (negative: predictions too fast on average)
//   nccl_mean_abs_error_pct, nccl_max_abs_error_pct
//   suite_s                one prediction of the whole suite (2 workers)
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>

#include "validation/nccl_validation_run.hpp"
#include "validation/validation_run.hpp"

namespace {

using namespace tandem;

void BM_ValidationSuite(benchmark::State& state) {
  std::vector<validation::ValidationCase> cases;
  for (const auto& f : validation::validation_case_files()) cases.push_back(validation::load_validation_case(f));
  std::vector<sim::NcclCase> nccl_cases;
  for (const auto& f : sim::nccl_case_files()) nccl_cases.push_back(sim::load_nccl_case(f));
  std::vector<validation::CaseResult> results;
  std::vector<validation::NcclCaseResult> nccl;
  double suite_s = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    results = validation::run_cases(cases, 2);
    nccl = validation::run_nccl_cases(nccl_cases, 2);
    suite_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  std::fprintf(stderr, "%s\n%s", validation::format_table(results).c_str(),
               validation::format_nccl_table(nccl).c_str());
  const validation::Summary s = validation::summarize(results);
  const validation::Summary n = validation::summarize_errors(nccl);
  state.counters["cases"] = s.cases;
  state.counters["failed"] = s.failed;
  state.counters["mean_abs_error_pct"] = 100 * s.mean_abs_error;
  state.counters["max_abs_error_pct"] = 100 * s.max_abs_error;
  state.counters["mean_error_pct"] = 100 * s.mean_error;
  state.counters["nccl_mean_abs_error_pct"] = 100 * n.mean_abs_error;
  state.counters["nccl_max_abs_error_pct"] = 100 * n.max_abs_error;
  state.counters["suite_s"] = suite_s / static_cast<double>(state.iterations());
}
BENCHMARK(BM_ValidationSuite)->Iterations(1)->Unit(benchmark::kSecond);

}  // namespace

BENCHMARK_MAIN();
