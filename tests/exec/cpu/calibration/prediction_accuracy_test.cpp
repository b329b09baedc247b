// Prediction accuracy on this machine: calibrate the CPU backend in this very run (the full grid
// takes a second or two), then train strategies for real (median iteration time) and simulate them
// on the calibrated localhost cluster (in a forked child: one SimGrid engine per process), and
// compare. The table is printed whatever happens.
//
// The machine is shared: other programs (builds, other tests under ctest -j) take CPU at the
// same time, and Linux shares the cores between sessions before threads. The simulator models
// that share (NodeGroup::shared_cores and background_load, measured during each run), but not
// what else a busy neighbour costs (caches it evicts, wake-ups it delays), so the 10% bound is
// asserted for runs during which other programs used less than a tenth of the cores; each case
// is measured up to kAttempts times to find such a moment, and skipped, saying so, without one.
//
// One rank: the calibrated kernels and launch overhead predict a training step within ~5%
// (+0.6% to +5% measured, quiet or with one core busy elsewhere). Several ranks: NOT yet within
// 10% for every strategy (DISABLED_; run it with --gtest_also_run_disabled_tests).
//
// Why ranks lost time: every hand-off between threads waits for a core, and when every core is
// busy (more rank and worker threads than cores) that wait was a scheduler tick (~4 ms here).
// The CPU backend now runs at most one thread per core (core_gate.hpp: core permits, each
// pinned to its core, handed FIFO to the next thread, first to a rank the blocking thread waits
// for; a rank's stream worker takes a core only when it would otherwise idle), wakes a blocked
// thread only when its condition holds, and a send or a collective is completed by whichever
// side arrives last (one wake-up). A wait spins (up to 100 us) only while no thread that needs a
// core is queued for one: a rank, or a stream worker with an op nobody else will run (its host
// waits too, or has not taken the op within 20 us: a pipeline send). Pipeline ranks used to
// spin 100 us on every hand-off while the worker holding the message their partner needed was
// queued for that very core (pipeline pp=2, same machine and load, A/B: 5.1-6.5 ms before, 4.3-5.5
// after). Stream workers
// sleep until their host queues them for a core (core_gate.hpp: prepare_sleep): a woken worker
// no longer preempts a running rank, nor blocks its host's next notify (glibc waits for a
// woken waiter to run: up to 0.7 ms measured). What remains: with 4 ranks on 2 cores and
// frequent synchronisation (hybrids), ranks take turns on the cores and every synchronisation
// of a rank whose partner is not running costs core switches, which the simulator does not
// charge.
// Iteration time: the period between iteration ends (cpu_run.hpp): with ranks taking turns on
// the cores, one iteration's window (first start to last end) spans more than a period.
//
// Error (prediction vs measured median) on the 2-core development VM, gpt-tiny, on quiet runs
// (others <= 0.2 cores), each test run calibrating afresh; range over the runs:
//   strategy           previously (7 runs)  now (3-6 runs)      measured median, ms (now)
//   data dp=2          -1.5% .. +4.6%       +3.9% .. +9.9%      3.5 .. 3.6
//   tensor tp=2        -8.8% .. +2%         +8% .. +14%         4.0
//   pipeline pp=2      -18% .. -5.5%        -13% .. +12%        4.3 .. 6.3
//   zero-1 dp=2        -3.8% .. +4.1%       +4.1% .. +10.9%     3.4 .. 3.5
//   data dp=4          -9.7% .. +2.7%       +1.8% .. +2.6%      4.0 .. 4.2
//   zero-1 dp=4        -14.5% .. -4.7%      -3.8% .. +1.3%      3.7 .. 3.8
//   hybrid dp=2 tp=2   -47% .. -16%         -32% .. -10%        ~7.0
//   hybrid tp=2 pp=2   -59% .. -46%         -48% .. -35%        ~8.7
// (now: the backend got faster; tensor and pipeline are now predicted up to ~14% too slow: the
// calibrated hand-off and collective costs were measured with the old waits.)
// With another program busy (others ~1 core) the multi-rank cases are still predicted 15-50%
// too fast.
//
// TANDEM_CALIBRATION_VERBOSE=1 prints, per case, the calibration, kernel time per class, the
// process's CPU time and context switches, each rank's comm op durations and last step;
// TANDEM_ACCURACY_CASES=<part of a case name> runs only those cases.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <sys/resource.h>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/calibration/calibrate.hpp"
#include "analysis/calibration/fit.hpp"
#include "analysis/calibration/workloads.hpp"
#include "exec/cpu/calibration/cpu_microbenchmarks.hpp"
#include "exec/cpu/calibration/machine_load.hpp"
#include "exec/cpu/cpu_run.hpp"
#include "scenarios/scenario.hpp"
#include "sim/simulation.hpp"
#include "tests/sim/sim_test_support.hpp"

namespace tandem {
namespace {

const int kCores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
constexpr double kQuietFraction = 0.10;  // of the cores, used by other programs
constexpr int kAttempts = 4;
constexpr double kBound = 0.10;

bool verbose() { return std::getenv("TANDEM_CALIBRATION_VERBOSE") != nullptr; }

struct Case {
  std::string name;
  std::string type;  // data_parallel | hybrid
  int dp = 1, tp = 1, pp = 1, zero = 0;
  int world() const { return dp * tp * pp; }
};

// The calibrated localhost: `devices` ranks on this machine's cores, the fitted profile and link.
Cluster calibrated_localhost(const calibration::CalibrationResult& c, int devices) {
  Cluster cluster = find_cluster("localhost");
  NodeGroup& g = cluster.groups.front();
  g.device = c.profile;
  g.devices_per_node = devices;
  g.intra_link = c.intra_link;
  g.intra_bus = LinkSpec{c.intra_link.bandwidth_bytes_per_s * devices, 0};
  g.shared_cores = kCores;
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

// Diagnosis: rank 0's kernel time per class, measured vs the fitted curves.
void print_classes(const exec::cpu::RunResult& run, std::shared_ptr<const Strategy> strategy,
                   const DeviceProfile& profile) {
  calibration::Workload w;
  w.strategy = std::move(strategy);
  const auto classes = calibration::kernel_classes(w);
  std::map<std::string, std::pair<double, double>> sums;
  for (const TraceRecord& r : run.trace.records) {
    const auto it = classes.find(r.op_id);
    if (r.rank != 0 || it == classes.end()) continue;
    const auto c = profile.efficiency_curves.find(it->second);
    if (c == profile.efficiency_curves.end()) continue;
    const bool flops = c->second.bound == BoundSide::flops;
    sums[it->second].first += r.end_s - r.start_s;
    sums[it->second].second += flops ? c->second.seconds(r.flops, profile.peak_fp32_flops_per_s)
                                     : c->second.seconds(r.bytes, profile.memory_bandwidth_bytes_per_s);
  }
  for (const auto& [name, pair] : sums)
    std::printf("     %-26s measured %8.3f ms  curve %8.3f ms\n", name.c_str(), pair.first * 1e3, pair.second * 1e3);
}

struct Measured {
  Seconds iteration_s = 0;      // median over the measured iterations
  double others_cores = 0;      // cores other programs used meanwhile
};

Measured measure(const Scenario& s, const DeviceProfile& profile) {
  auto strategy = make_strategy(s);
  auto model = make_model(s.model);
  exec::cpu::RunOptions options;
  exec::cpu::configure_for_model(options, *model, s.training.seq_length);
  options.warmup_iterations = 2;
  options.iterations = 15;
  options.record_trace = verbose();
  exec::cpu::OtherProgramsMeter others;
  Measured m;
  options.on_iteration = [&](const exec::cpu::IterationStats& it) {
    if (it.iteration == options.warmup_iterations - 1) others.restart();
    if (it.iteration == options.warmup_iterations + options.iterations - 1) m.others_cores = others.cores();
  };
  rusage before{}, after{};
  getrusage(RUSAGE_SELF, &before);
  const exec::cpu::RunResult run = exec::cpu::run_cpu(*strategy, options);
  getrusage(RUSAGE_SELF, &after);
  if (verbose()) {
    const auto s = [](const timeval& a, const timeval& b) { return (b.tv_sec - a.tv_sec) + 1e-6 * (b.tv_usec - a.tv_usec); };
    std::printf("     this process's CPU / wall: user %.2f sys %.2f cores; context switches %ld voluntary, %ld not\n",
                s(before.ru_utime, after.ru_utime) / run.wall_time_s, s(before.ru_stime, after.ru_stime) / run.wall_time_s,
                after.ru_nvcsw - before.ru_nvcsw, after.ru_nivcsw - before.ru_nivcsw);
  }
  if (verbose()) {
    print_classes(run, std::move(strategy), profile);
    // Kernel time of all ranks per step over the cores: what the step would take if the cores
    // never idled (the gap to the measured step is hand-offs and waits).
    double compute_s = 0, comm_s = 0;
    for (const auto& r : run.ranks) compute_s += r.compute_s, comm_s += r.comm_busy_s;
    const int steps = options.warmup_iterations + options.iterations;
    std::printf("     kernels of all ranks / cores %.3f ms per step, comm busy %.3f ms per step\n",
                compute_s / steps / kCores * 1e3, comm_s / steps * 1e3);
    // Where the ranks wait: gaps over 0.2 ms between consecutive ops of a rank, last iteration.
    const int last = steps - 1;
    for (int rank = 0; rank < static_cast<int>(run.ranks.size()); ++rank) {
      std::vector<const TraceRecord*> ops;
      std::vector<double> comm;
      for (const TraceRecord& r : run.trace.records)
        if (r.rank == rank && r.iteration == last && !is_communication(r.kind)) ops.push_back(&r);
        else if (r.rank == rank && r.iteration >= 2 && is_communication(r.kind)) comm.push_back(r.end_s - r.start_s);
      std::sort(comm.begin(), comm.end());
      {
        double first = 1e9, end = 0, busy = 0;
        std::string comms;
        for (const TraceRecord& r : run.trace.records) {
          if (r.rank != rank || r.iteration != last) continue;
          first = std::min(first, r.start_s), end = std::max(end, r.end_s);
          if (!is_communication(r.kind)) busy += r.end_s - r.start_s;
          else comms += " [" + std::to_string((r.start_s) * 1e3) + " " + std::to_string(r.end_s * 1e3) + "]";
        }
        std::printf("     rank %d last step %.3f .. %.3f ms, kernels %.3f ms, comm%s\n", rank, first * 1e3, end * 1e3,
                    busy * 1e3, comms.substr(0, 200).c_str());
      }
      if (!comm.empty())
        std::printf("     rank %d comm ops %zu: p10 %.3f p50 %.3f p90 %.3f max %.3f ms\n", rank, comm.size(),
                    comm[comm.size() / 10] * 1e3, comm[comm.size() / 2] * 1e3, comm[comm.size() * 9 / 10] * 1e3,
                    comm.back() * 1e3);
      std::sort(ops.begin(), ops.end(), [](auto* a, auto* b) { return a->start_s < b->start_s; });
      double end = ops.empty() ? 0 : ops.front()->start_s;
      for (const TraceRecord* r : ops) {
        if (r->start_s - end > 2e-4)
          std::printf("     rank %d gap %.2f ms before %s (%.2f ms)\n", rank, (r->start_s - end) * 1e3,
                      r->op_id.c_str(), (r->end_s - r->start_s) * 1e3);
        end = std::max(end, r->end_s);
      }
    }
  }
  std::vector<double> times;
  for (const auto& it : run.iterations) {
    if (!it.warmup) times.push_back(it.time_s);
  }
  m.iteration_s = calibration::median(times);
  return m;
}

Seconds predict(const Scenario& s) {
  auto child = sim_test::run_in_child([&] {
    sim_test::quiet_simgrid();
    auto strategy = make_strategy(s);
    sim::SimulationOptions options;
    // Ranks taking turns on the cores may alternate long and short iterations: the mean of several.
    options.warmup_iterations = 2;
    options.iterations = 6;
    return nlohmann::json(sim::simulate(*strategy, s.cluster, options).iteration_time_s).dump();
  });
  if (!child.ok) throw std::runtime_error(child.describe());
  return nlohmann::json::parse(child.output).get<double>();
}

// Calibrates, runs and simulates every case, prints the table and asserts the bound on the quiet
// runs; skips when no run was quiet.
void check_cases(const std::vector<Case>& cases) {
  int max_world = 2;
  for (const Case& k : cases) max_world = std::max(max_world, k.world());
  exec::cpu::CpuMicrobenchmarks bench(max_world);
  const calibration::CalibrationResult calibrated =
      calibration::calibrate(bench, find_device_profile("cpu-generic"), calibration::CalibrationOptions{});
  if (verbose()) std::printf("%s", calibration::describe(calibrated).c_str());

  std::printf("%-18s %5s %12s %13s %8s %14s\n", "strategy", "ranks", "measured ms", "predicted ms", "error",
              "others (cores)");
  int asserted = 0;
  std::string busy;
  const char* only = std::getenv("TANDEM_ACCURACY_CASES");  // e.g. "tp=2": the cases named so
  for (const Case& k : cases) {
    if (only != nullptr && k.name.find(only) == std::string::npos) continue;
    Scenario s = scenario_for(k, calibrated_localhost(calibrated, k.world()));
    Measured m;
    for (int attempt = 0; attempt < kAttempts; ++attempt) {
      const Measured again = measure(s, calibrated.profile);
      if (attempt == 0 || again.others_cores < m.others_cores) m = again;
      if (m.others_cores <= kQuietFraction * kCores) break;
    }
    // The machine as the run found it: the cores other programs took are an input of the model.
    s.cluster.groups.front().background_load = std::min(m.others_cores, kCores - 0.05);
    const Seconds predicted = predict(s);
    const double error = (predicted - m.iteration_s) / m.iteration_s;
    const bool quiet = m.others_cores <= kQuietFraction * kCores;
    std::printf("%-18s %5d %12.3f %13.3f %+7.1f%% %9.2f%s\n", k.name.c_str(), k.world(), m.iteration_s * 1e3,
                predicted * 1e3, 100 * error, m.others_cores, quiet ? "" : "  (busy: not asserted)");
    std::fflush(stdout);
    if (quiet) {
      ++asserted;
      EXPECT_LT(std::abs(error), kBound) << k.name << ": predicted " << predicted << " s, measured "
                                         << m.iteration_s << " s";
    } else {
      char line[160];
      std::snprintf(line, sizeof line, "%s%s %+.0f%% (others %.2f cores)", busy.empty() ? "" : "; ",
                    k.name.c_str(), 100 * error, m.others_cores);
      busy += line;
    }
  }
  if (asserted == 0) {
    GTEST_SKIP() << "other programs kept more than " << kQuietFraction * kCores
                 << " cores busy during every run, so the 10% bound was not asserted: " << busy;
  }
}

TEST(PredictionAccuracy, CalibratedLocalhostPredictsAOneRankStepWithinTenPercent) {
  check_cases({{"one rank", "data_parallel", 1, 1, 1, 0}});
}

TEST(PredictionAccuracy, DISABLED_CalibratedLocalhostPredictsEveryStrategyWithinTenPercent) {
  check_cases({
      {"data dp=2", "data_parallel", 2, 1, 1, 0},     {"tensor tp=2", "hybrid", 1, 2, 1, 0},
      {"pipeline pp=2", "hybrid", 1, 1, 2, 0},        {"zero-1 dp=2", "hybrid", 2, 1, 1, 1},
      {"data dp=4", "data_parallel", 4, 1, 1, 0},     {"zero-1 dp=4", "hybrid", 4, 1, 1, 1},
      {"hybrid dp=2 tp=2", "hybrid", 2, 2, 1, 0},     {"hybrid tp=2 pp=2", "hybrid", 1, 2, 2, 0},
  });
}

}  // namespace
}  // namespace tandem
