#include "validation/validation_run.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <map>

#include "common/process_pool.hpp"
#include "scenarios/prediction_inputs.hpp"
#include "sim/prediction.hpp"
#include "sim/simulation.hpp"

namespace tandem::validation {

namespace {

// Runs in the child: simulate the case and hand back what the table needs, as JSON.
std::string predict(const ValidationCase& c) {
  auto strategy = make_strategy(c.scenario);
  const sim::SimulationResult r = sim::simulate(*strategy, c.scenario.cluster, c.scenario.simulation);
  const sim::Prediction p = sim::summarize(r, c.scenario.cluster, prediction_inputs(c.scenario, *strategy));
  return nlohmann::json{{"iteration_time_s", p.iteration_time_s},
                        {"compute_s", p.slowest.compute_s},
                        {"exposed_comm_s", p.slowest.exposed_comm_s},
                        {"idle_s", p.slowest.idle_s},
                        {"out_of_memory", p.out_of_memory},
                        {"wall_s", r.wall_time_s}}
      .dump();
}

CaseResult result_of(const ValidationCase& c, const ProcessOutcome& outcome) {
  CaseResult r;
  r.name = c.name();
  r.source = c.source;
  r.devices = c.devices();
  for (const NodeGroup& g : c.scenario.cluster.groups) {
    if (r.device_kind.find(g.device.name) == std::string::npos)
      r.device_kind += (r.device_kind.empty() ? "" : "+") + g.device.name;
  }
  r.band_pct = c.band_pct;
  r.published_s = c.published_iteration_time_s();
  r.published_tflops_per_gpu = c.tflops_per_gpu(r.published_s);
  if (!outcome.ok) {
    r.failure = outcome.error;
    return r;
  }
  const auto j = nlohmann::json::parse(outcome.output);
  r.ok = true;
  r.predicted_s = j.at("iteration_time_s").get<double>();
  r.predicted_tflops_per_gpu = c.tflops_per_gpu(r.predicted_s);
  r.compute_s = j.at("compute_s").get<double>();
  r.exposed_comm_s = j.at("exposed_comm_s").get<double>();
  r.idle_s = j.at("idle_s").get<double>();
  r.out_of_memory = j.at("out_of_memory").get<bool>();
  r.wall_s = j.at("wall_s").get<double>();
  return r;
}

std::string line(const char* format, ...) __attribute__((format(printf, 1, 2)));
std::string line(const char* format, ...) {
  char buffer[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buffer, sizeof buffer, format, args);
  va_end(args);
  return buffer;
}

}  // namespace

bool CaseResult::within_band() const { return ok && std::abs(error()) * 100 <= band_pct; }

std::vector<CaseResult> run_cases(const std::vector<ValidationCase>& cases, int workers) {
  // Cases this machine cannot simulate are reported as they are, without a worker.
  std::vector<std::size_t> runnable;
  for (std::size_t i = 0; i < cases.size(); ++i)
    if (cases[i].refused.empty()) runnable.push_back(i);
  sim::load_simulator();  // once here, not in every worker
  const auto outcomes = run_in_processes(
      runnable.size(), [&](std::size_t k) { return predict(cases[runnable[k]]); }, std::max(1, workers));
  std::vector<ProcessOutcome> outcome_of(cases.size());
  for (std::size_t k = 0; k < runnable.size(); ++k) outcome_of[runnable[k]] = outcomes[k];
  std::vector<CaseResult> results;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    if (!cases[i].refused.empty()) outcome_of[i].error = "not simulated: " + cases[i].refused;
    results.push_back(result_of(cases[i], outcome_of[i]));
  }
  return results;
}

Summary summarize(const std::vector<CaseResult>& results) { return summarize_errors(results); }

std::string summary_line(const Summary& s, const char* cases, int count_width) {
  return line("%*d %s, %d failed; mean |error| %.1f%%, max |error| %.1f%% (%s); mean error %+.1f%%", count_width,
              s.cases, cases, s.failed, 100 * s.mean_abs_error, 100 * s.max_abs_error, s.worst.c_str(),
              100 * s.mean_error);
}

std::vector<std::pair<std::string, Summary>> summarize_by_device(const std::vector<CaseResult>& results) {
  std::map<std::string, std::vector<CaseResult>> by_kind;
  for (const CaseResult& r : results) by_kind[r.device_kind].push_back(r);
  std::vector<std::pair<std::string, Summary>> out;
  for (const auto& [kind, of_kind] : by_kind) out.emplace_back(kind, summarize(of_kind));
  return out;
}

std::string format_table(const std::vector<CaseResult>& results) {
  std::string out = line("%-34s %6s %10s %10s %8s %8s %8s  %-22s %s\n", "case", "GPUs", "published",
                         "predicted", "error", "TF/GPU", "pub TF", "compute/comm/idle (s)", "source");
  for (const CaseResult& r : results) {
    if (!r.ok) {
      out += line("%-34s %6d %9.3fs %10s  FAILED: %s\n", r.name.c_str(), r.devices, r.published_s, "-",
                  r.failure.c_str());
      continue;
    }
    const std::string split = line("%.2f/%.2f/%.2f", r.compute_s, r.exposed_comm_s, r.idle_s);
    out += line("%-34s %6d %9.3fs %9.3fs %+7.1f%% %8.1f %8.1f  %-22s %.60s%s%s\n", r.name.c_str(), r.devices,
                r.published_s, r.predicted_s, 100 * r.error(), r.predicted_tflops_per_gpu,
                r.published_tflops_per_gpu, split.c_str(), r.source.c_str(),
                r.within_band() ? "" : "  [outside its band]", r.out_of_memory ? "  [predicted OOM]" : "");
  }
  const Summary s = summarize(results);
  out += "\n" + summary_line(s, "cases") + "\n";
  for (const auto& [kind, k] : summarize_by_device(results))
    out += line("  %-24s ", kind.c_str()) + summary_line(k, "cases", 2) + "\n";
  out += "(error = predicted / published - 1: a negative mean error is a prediction too fast on average)\n";
  return out;
}

}  // namespace tandem::validation
