// Prediction accuracy on this machine: calibrate the CPU backend (quick grid, in this very run,
// so the profile describes the machine as loaded now), then for every strategy family the CPU
// backend runs, train it for real (median iteration time) and simulate it on the calibrated
// localhost cluster (in a forked child: one SimGrid engine per process), and compare.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <thread>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../../../sim/sim_test_support.hpp"
#include "analysis/calibration/calibrate.hpp"
#include "analysis/calibration/fit.hpp"
#include "analysis/calibration/workloads.hpp"
#include "exec/cpu/calibration/cpu_microbenchmarks.hpp"
#include "exec/cpu/calibration/machine_load.hpp"
#include "exec/cpu/cpu_run.hpp"
#include "scenarios/scenario.hpp"
#include "sim/simulation.hpp"

namespace tandem {
namespace {

const int kCores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));

struct Case {
  std::string name;
  std::string type;  // data_parallel | hybrid
  int dp = 1, tp = 1, pp = 1, zero = 0;
  int world() const { return dp * tp * pp; }
};

// The calibrated localhost: `devices` cores as devices with the fitted profile and link.
Cluster calibrated_localhost(const calibration::CalibrationResult& c, int devices, double background_load) {
  Cluster cluster = find_cluster("localhost");
  NodeGroup& g = cluster.groups.front();
  g.device = c.profile;
  g.devices_per_node = devices;
  g.intra_link = c.intra_link;
  g.intra_bus = LinkSpec{c.intra_link.bandwidth_bytes_per_s * devices, 0};
  g.shared_cores = kCores;
  g.background_load = background_load;
  return cluster;
}

Scenario scenario_for(const Case& k, const Cluster& cluster) {
  Scenario s = load_scenario("gpt-tiny-localhost");
  s.cluster = cluster;
  s.strategy_type = k.type;
  s.parallel.data_parallel_size = k.dp;
  s.parallel.tensor_model_parallel_size = k.tp;
  s.parallel.pipeline_model_parallel_size = k.pp;
  s.parallel.zero_stage = k.zero;
  return s;
}

struct Timing {
  Seconds iteration_s = 0;
  Seconds best_iteration_s = 0;  // the fastest measured iteration
  double background_load = 0;  // cores other programs used during the measured iterations
  Seconds compute_s = 0;  // rank 0, per iteration
  std::size_t compute_ops = 0;
};

// Diagnosis (TANDEM_CALIBRATION_VERBOSE): rank 0's kernel time per class, measured vs the curves.
void print_classes(const exec::cpu::RunResult& run, std::shared_ptr<const Strategy> strategy,
                   const DeviceProfile& profile) {
  if (std::getenv("TANDEM_CALIBRATION_VERBOSE") == nullptr) return;
  calibration::Workload w;
  w.strategy = std::move(strategy);
  const auto classes = calibration::kernel_classes(w);
  std::map<std::string, std::pair<double, double>> sums;
  for (const TraceRecord& r : run.trace.records) {
    if (r.rank != 0 || r.stream != Stream::compute || is_communication(r.kind)) continue;
    auto it = classes.find(r.op_id);
    if (it == classes.end()) continue;
    auto c = profile.efficiency_curves.find(it->second);
    double predicted = 0;
    if (c != profile.efficiency_curves.end()) {
      predicted = c->second.bound == BoundSide::flops ? c->second.seconds(r.flops, profile.peak_fp32_flops_per_s)
                                                      : c->second.seconds(r.bytes, profile.memory_bandwidth_bytes_per_s);
    }
    sums[it->second].first += r.end_s - r.start_s;
    sums[it->second].second += predicted;
  }
  for (const auto& [name, pair] : sums)
    std::printf("     %-24s measured %8.3f ms predicted %8.3f ms\n", name.c_str(), pair.first * 1e3, pair.second * 1e3);
}

Timing measured(const Scenario& s, const DeviceProfile& profile) {
  auto strategy = make_strategy(s);
  auto model = make_model(s.model);
  exec::cpu::RunOptions options;
  exec::cpu::configure_for_model(options, *model, s.training.seq_length);
  options.warmup_iterations = 2;
  options.iterations = 15;
  exec::cpu::OtherProgramsMeter others;
  double background_load = 0;
  options.on_iteration = [&](const exec::cpu::IterationStats& it) {
    if (it.iteration == options.warmup_iterations - 1) others.restart();
    if (it.iteration == options.warmup_iterations + options.iterations - 1) {
      background_load = others.cores();
      if (std::getenv("TANDEM_CALIBRATION_VERBOSE")) std::printf("   own cores %.2f\n", others.own_cores());
    }
  };
  options.record_trace = std::getenv("TANDEM_CALIBRATION_VERBOSE") != nullptr;
  const exec::cpu::RunResult run = exec::cpu::run_cpu(*strategy, options);
  print_classes(run, std::move(strategy), profile);
  std::vector<double> times;
  for (const auto& it : run.iterations) {
    if (!it.warmup) times.push_back(it.time_s);
  }
  Timing t;
  t.iteration_s = calibration::median(times);
  t.best_iteration_s = *std::min_element(times.begin(), times.end());
  t.background_load = std::min(background_load, kCores - 0.05);
  t.compute_s = run.ranks[0].compute_s / (options.warmup_iterations + options.iterations);
  t.compute_ops = run.ranks[0].compute_ops / (options.warmup_iterations + options.iterations);
  return t;
}

Timing predicted(const Scenario& s) {
  auto child = sim_test::run_in_child([&] {
    sim_test::quiet_simgrid();
    auto strategy = make_strategy(s);
    sim::SimulationOptions options;
    options.warmup_iterations = 1;
    options.iterations = 2;
    const sim::SimulationResult r = sim::simulate(*strategy, s.cluster, options);
    nlohmann::json j;
    j["iteration_s"] = r.iteration_time_s;
    j["compute_s"] = r.ranks[0].compute_s / options.iterations;
    return j.dump();
  });
  if (!child.ok) throw std::runtime_error(child.describe());
  const auto j = nlohmann::json::parse(child.output);
  Timing t;
  t.iteration_s = j["iteration_s"].get<double>();
  t.compute_s = j["compute_s"].get<double>();
  return t;
}

TEST(PredictionAccuracy, CalibratedLocalhostPredictsEveryStrategyWithinTenPercent) {
  const std::vector<Case> cases{
      {"data dp=2", "data_parallel", 2, 1, 1, 0},
      {"tensor tp=2", "hybrid", 1, 2, 1, 0},
      {"pipeline pp=2", "hybrid", 1, 1, 2, 0},
      {"zero-1 dp=2", "hybrid", 2, 1, 1, 1},
      {"data dp=4", "data_parallel", 4, 1, 1, 0},
      {"hybrid dp=2 tp=2", "hybrid", 2, 2, 1, 0},
      {"hybrid tp=2 pp=2", "hybrid", 1, 2, 2, 0},
  };
  int max_world = 2;
  for (const Case& k : cases) max_world = std::max(max_world, k.world());
  exec::cpu::CpuMicrobenchmarks bench(max_world);
  calibration::CalibrationOptions options;
  options.quick = true;
  const DeviceProfile base = find_device_profile("cpu-generic");
  const calibration::CalibrationResult calibrated = calibration::calibrate(bench, base, options);
  std::printf("%s", calibration::describe(calibrated).c_str());
  for (const auto& step : calibrated.measurements.compute) {
    double k = 0;
    for (const auto& op : step.ops) k += op.seconds;
    std::printf("step %.3f ms kernels %.3f ms ops %zu\n", step.step_s * 1e3, k * 1e3, step.ops.size());
  }

  std::printf("%-20s %6s %12s %12s %8s\n", "strategy", "ranks", "measured ms", "predicted ms", "error");
  for (const Case& k : cases) {
    // The run first, then its prediction on the machine as the run found it: the cores other
    // programs took meanwhile (this changes by the second on a shared machine) are an input.
    Scenario s = scenario_for(k, calibrated_localhost(calibrated, k.world(), 0));
    const Timing m = measured(s, calibrated.profile);
    const Timing quiet = predicted(s);
    s.cluster.groups.front().background_load = m.background_load;
    const Timing p = predicted(s);
    std::printf("   best iteration %.3f ms, predicted on a quiet machine %.3f ms (%+.1f%%)\n", m.best_iteration_s * 1e3,
                quiet.iteration_s * 1e3, 100 * (quiet.iteration_s - m.best_iteration_s) / m.best_iteration_s);
    const Seconds measured = m.iteration_s, predicted = p.iteration_s;
    std::printf("   background load %.2f cores; ", m.background_load);
    std::printf("rank 0 compute: measured %.3f ms (%zu ops), predicted %.3f ms\n", m.compute_s * 1e3, m.compute_ops,
                p.compute_s * 1e3);
    const double error = (predicted - measured) / measured;
    std::printf("%-20s %6d %12.3f %12.3f %+7.1f%%\n", k.name.c_str(), k.world(), measured * 1e3, predicted * 1e3,
                100 * error);
    EXPECT_LT(std::abs(error), 0.10) << k.name << ": predicted " << predicted << " s, measured " << measured << " s";
  }
}

}  // namespace
}  // namespace tandem
