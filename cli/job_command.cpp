#include "cli/job_command.hpp"
#include "cli/option_ranges.hpp"

#include <yaml-cpp/yaml.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "analysis/calibration/provenance.hpp"
#include "analysis/trace.hpp"
#include "cli/calibrate_command.hpp"
#include "cli/child_process.hpp"
#include "cli/compare_command.hpp"
#include "cli/report_command.hpp"
#include "cli/run_command.hpp"
#include "cli/search_command.hpp"
#include "cli/simulate_command.hpp"
#include "common/input_error.hpp"
#include "common/input_file.hpp"
#include "platforms/cluster.hpp"
#include "platforms/device.hpp"

namespace tandem::cli {

namespace fs = std::filesystem;

CLI::App* add_job_command(CLI::App& app, JobOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "job", "the main job: search a modeled heterogeneous cluster, then calibrate, search, run and "
             "compare on this machine; writes reports");
  cmd->add_option("-o,--out", o.out_dir, "output folder (default tandem-job)");
  cmd->add_option("--cluster-search", o.cluster_search, "part A: scenario with a search: section (modeled cluster)");
  cmd->add_option("--local-search", o.local_search, "part B: scenario with a search: section (this machine)");
  cmd->add_option("--iterations", o.run_iterations, "part B: measured iterations of the real run")
      ->check(in_range(limits::kIterations));
  cmd->add_option("--workers", o.workers, "search worker processes (default: one per core)")->check(in_range(kWorkers));
  cmd->add_flag("--skip-cluster", o.skip_cluster, "skip part A");
  cmd->add_flag("--skip-local", o.skip_local, "skip part B");
  cmd->add_flag("--recalibrate", o.recalibrate, "part B: calibrate this machine even if its profile exists");
  return cmd;
}

namespace {

// Numbered steps with their duration; a failed step ends the job with its status.
class StepRunner {
 public:
  StepRunner(int total, fs::path logs) : total_(total), logs_(std::move(logs)) {}

  // Runs `body` in a child; its standard output goes to <logs>/<log_name>.log.
  int run(const std::string& title, const std::string& log_name, const std::function<int()>& body) {
    ++done_;
    std::cerr << "[" << done_ << "/" << total_ << "] " << title << "\n";
    const auto start = std::chrono::steady_clock::now();
    const fs::path log = logs_ / (log_name + ".log");
    std::error_code ec;
    fs::remove(log, ec);
    const int status = run_step_in_child(body, log.string());
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    char took[32];
    std::snprintf(took, sizeof took, "%.1f s", seconds);
    if (status != 0)
      std::cerr << "      failed (exit " << status << ") after " << took << "; its output: " << log.string() << "\n";
    else
      std::cerr << "      done in " << took << "\n";
    return status;
  }
  void skip(const std::string& title, const std::string& why) {
    ++done_;
    std::cerr << "[" << done_ << "/" << total_ << "] " << title << ": " << why << "\n";
  }
  void say(const std::string& line) const { std::cerr << "      " << line << "\n"; }

 private:
  int total_;
  int done_ = 0;
  fs::path logs_;
};

nlohmann::json read_json(const fs::path& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in, nullptr, false);
}

std::string seconds_text(double s) {
  char text[32];
  if (s < 1) std::snprintf(text, sizeof text, "%.2f ms", s * 1e3);
  else std::snprintf(text, sizeof text, "%.3f s", s);
  return text;
}

// The search's winner in one line, from its JSON (schema tandem-search/1).
std::string winner_line(const fs::path& search_json) {
  const nlohmann::json j = read_json(search_json);
  if (!j.is_object() || !j.contains("candidates") || j["candidates"].empty()) return "no strategy found";
  const auto& best = j["candidates"][0];
  std::string line = "best: " + best.value("strategy", std::string("?")) + ", " +
                     seconds_text(best.value("iteration_time_s", 0.0)) + " per iteration";
  if (best.contains("mfu") && best["mfu"].is_number()) {
    char mfu[32];
    std::snprintf(mfu, sizeof mfu, ", MFU %.1f%%", best["mfu"].get<double>() * 100);
    line += mfu;
  }
  return line;
}

// Is there a calibrated profile of this machine among the bundled platforms?
bool bundled_profile_is_this_machine(std::string& why) {
  const fs::path profile = fs::path(bundled_dir("platforms/devices")) / "localhost-calibrated.yaml";
  if (!fs::exists(profile)) {
    why = "no calibrated profile of localhost";
    return false;
  }
  const DeviceProfile device = load_device_profile(profile.string());
  const std::string differs = calibration::not_this_machine(device.calibrated, calibration::this_machine("cpu", ""));
  if (!differs.empty()) {
    why = "the bundled profile was not measured on this machine: " + differs;
    return false;
  }
  why = "the bundled profile was measured on this machine (" + device.calibrated.date + ")";
  return true;
}

// A copy of a scenario file whose cluster is `cluster_path` (a calibrated cluster written by this job).
std::string with_cluster(const std::string& scenario_name, const std::string& cluster_path, const fs::path& out) {
  const fs::path source = path_exists(scenario_name)
                              ? fs::path(scenario_name)
                              : fs::path(bundled_dir("scenarios")) / (scenario_name + ".yaml");
  YAML::Node node = YAML::LoadFile(source.string());
  node["cluster"] = cluster_path;
  YAML::Emitter emitter;
  emitter << node;
  write_file_atomically(out.string(), std::string(emitter.c_str()) + "\n");
  return out.string();
}

int part_cluster(const JobOptions& o, StepRunner& steps, const fs::path& dir, std::vector<std::string>& reports) {
  SearchOptions search;
  search.scenario = o.cluster_search;
  search.workers = o.workers;
  search.json_path = (dir / "search.json").string();
  search.winner_path = (dir / "winner.yaml").string();
  if (int s = steps.run("searching strategies for " + o.cluster_search + " (modeled cluster)", "cluster-search",
                        [&] { return run_search_command(search); }))
    return s;
  steps.say(winner_line(search.json_path));

  SimulateOptions simulate;
  simulate.scenario = search.winner_path;
  simulate.json_path = (dir / "prediction.json").string();
  if (int s = steps.run("simulating the winner", "cluster-simulate", [&] { return run_simulate(simulate); })) return s;

  ReportCommandOptions report;
  report.files.search = search.json_path;
  report.files.prediction = simulate.json_path;
  report.output_path = (dir / "report.html").string();
  if (int s = steps.run("writing the cluster report", "cluster-report", [&] { return run_report(report); })) return s;
  reports.push_back(report.output_path);
  return 0;
}

int part_local(const JobOptions& o, StepRunner& steps, const fs::path& dir, std::vector<std::string>& reports) {
  // 1. A profile of this machine: the bundled one if it was measured here, else a fresh one.
  std::string search_scenario = o.local_search;
  std::string why;
  if (!o.recalibrate && bundled_profile_is_this_machine(why)) {
    steps.skip("calibrating this machine", "not needed: " + why);
  } else {
    if (!o.recalibrate) steps.say(why);
    CalibrateOptions calibrate;
    calibrate.backend = "cpu";
    calibrate.device_out = (dir / "platforms/devices/localhost-calibrated.yaml").string();
    calibrate.cluster_out = (dir / "platforms/clusters/localhost-calibrated.yaml").string();
    fs::create_directories(dir / "platforms/devices");
    fs::create_directories(dir / "platforms/clusters");
    if (int s = steps.run("calibrating this machine (CPU backend microbenchmarks)", "local-calibrate",
                          [&] { return run_calibrate(calibrate); }))
      return s;
    search_scenario = with_cluster(o.local_search, fs::absolute(calibrate.cluster_out).string(), dir / "search-scenario.yaml");
  }

  // 2. Search this machine's strategies in the simulator.
  SearchOptions search;
  search.scenario = search_scenario;
  search.workers = o.workers;
  search.json_path = (dir / "search.json").string();
  search.winner_path = (dir / "winner.yaml").string();
  if (int s = steps.run("searching strategies for " + o.local_search + " (this machine)", "local-search",
                        [&] { return run_search_command(search); }))
    return s;
  steps.say(winner_line(search.json_path));

  // 3. Run the winner for real, and predict it with a trace of every op.
  RunCommandOptions run;
  run.scenario = search.winner_path;
  run.backend = "cpu";
  run.iterations = o.run_iterations;
  run.warmup = 2;
  run.trace_path = (dir / "measured.trace.json").string();
  run.json_path = (dir / "measured.json").string();
  if (int s = steps.run("running the winner for real (CPU backend, " + std::to_string(o.run_iterations) + " iterations)",
                        "local-run", [&] { return run_run(run); }))
    return s;

  SimulateOptions simulate;
  simulate.scenario = search.winner_path;
  simulate.json_path = (dir / "prediction.json").string();
  simulate.trace_path = (dir / "predicted.trace.json").string();
  if (int s = steps.run("simulating the winner", "local-simulate", [&] { return run_simulate(simulate); })) return s;

  // 4. Prediction against measurement, and the report.
  CompareCommandOptions compare;
  compare.predicted_path = simulate.trace_path;
  compare.measured_path = run.trace_path;
  compare.measured_warmup = run.warmup.value_or(0);  // the run's trace holds its warm-up iterations too
  compare.json_path = (dir / "compare.json").string();
  if (int s = steps.run("comparing prediction and measurement op by op", "local-compare",
                        [&] { return run_compare(compare); }))
    return s;
  const nlohmann::json c = read_json(compare.json_path);
  if (c.is_object() && c.contains("iteration_time")) {
    const auto& t = c["iteration_time"];
    std::string line = "iteration: predicted " + seconds_text(t.value("predicted_s", 0.0)) + ", measured " +
                       seconds_text(t.value("measured_s", 0.0));
    if (t["error"].is_number()) {
      char error[32];
      std::snprintf(error, sizeof error, " (error %+.1f%%)", t["error"].get<double>() * 100);
      line += error;
    }
    steps.say(line);
  }

  ReportCommandOptions report;
  report.files.search = search.json_path;
  report.files.prediction = simulate.json_path;
  report.files.measured_summary = run.json_path;
  report.files.predicted_trace = simulate.trace_path;
  report.files.measured_trace = run.trace_path;
  report.output_path = (dir / "report.html").string();
  report.perfetto_path = (dir / "timeline.perfetto.json").string();
  if (int s = steps.run("writing this machine's report", "local-report", [&] { return run_report(report); })) return s;
  reports.push_back(report.output_path);
  return 0;
}

}  // namespace

int run_job(const JobOptions& o) {
  if (o.skip_cluster && o.skip_local) throw InputError("command line", 0, "--skip-cluster", "nothing left to do");
  const fs::path out = fs::absolute(o.out_dir);
  const fs::path cluster_dir = out / "cluster", local_dir = out / "localhost";
  fs::create_directories(cluster_dir);
  fs::create_directories(local_dir);
  // Steps: A = search, simulate, report; B = calibrate, search, run, simulate, compare, report.
  StepRunner steps((o.skip_cluster ? 0 : 3) + (o.skip_local ? 0 : 6), out);
  std::vector<std::string> reports;
  if (!o.skip_cluster) {
    std::cerr << "== A. " << o.cluster_search << ": the best strategy on a modeled cluster\n";
    if (int s = part_cluster(o, steps, cluster_dir, reports)) return s;
  }
  if (!o.skip_local) {
    std::cerr << "== B. " << o.local_search << ": this machine, predicted and measured\n";
    if (int s = part_local(o, steps, local_dir, reports)) return s;
  }
  std::cout << "\nreports:\n";
  for (const std::string& r : reports) std::cout << "  " << r << "\n";
  return 0;
}

}  // namespace tandem::cli
