#include "analysis/calibration/calibrate.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <stdexcept>

#include "analysis/calibration/workloads.hpp"
#include "analysis/format.hpp"

namespace tandem::calibration {

namespace {

// The other side must explain the points clearly better to be chosen: 10% less rms error and
// half a percent less in absolute terms (two exact fits differ by rounding only).
constexpr double kSideTieRatio = 1.10;
constexpr double kSideTieFloor = 0.005;

BoundSide usual_side(OpKind kind) {
  return kind == OpKind::gemm || kind == OpKind::attention ? BoundSide::flops : BoundSide::memory;
}

bool uses_tensor_cores(OpKind kind) { return kind == OpKind::gemm || kind == OpKind::attention; }

std::optional<CurveFit> try_side(const std::vector<OpTiming>& ops, BoundSide side, double peak_per_s,
                                 Seconds launch_s) {
  std::vector<Point> points;
  for (const OpTiming& op : ops) {
    const double work = side == BoundSide::flops ? op.flops : op.bytes;
    if (!(work > 0)) return std::nullopt;  // this side cannot explain an op without such work
    points.push_back({work, op.seconds});
  }
  try {
    return fit_curve(points, side, peak_per_s, launch_s);
  } catch (const std::invalid_argument&) {
    return std::nullopt;
  }
}

std::optional<CurveFit> fit_kind(OpKind kind, const std::vector<OpTiming>& ops, const DeviceProfile& base,
                                 DType precision, Seconds launch_s) {
  const DType dtype = uses_tensor_cores(kind) ? precision : DType::fp32;
  const auto flops = try_side(ops, BoundSide::flops, base.peak_flops_per_s(dtype), launch_s);
  const auto memory = try_side(ops, BoundSide::memory, base.memory_bandwidth_bytes_per_s, launch_s);
  if (!flops) return memory;
  if (!memory) return flops;
  const CurveFit& usual = usual_side(kind) == BoundSide::flops ? *flops : *memory;
  const CurveFit& other = usual_side(kind) == BoundSide::flops ? *memory : *flops;
  return other.rms_relative_error * kSideTieRatio + kSideTieFloor < usual.rms_relative_error ? other : usual;
}

}  // namespace

// The kernels of the steps run alone over the same kernels (by label) with every core busy,
// summed: the large kernels, which make a step's time, weigh the most. 1 without alone steps.
static double alone_kernel_time_fraction(const Measurements& m) {
  Seconds alone_s = 0, busy_s = 0;
  for (const AloneStep& step : m.alone) {
    std::map<std::string, Seconds> busy;
    for (const OpTiming& op : m.compute.at(step.busy).ops)
      if (!is_communication(op.kind)) busy[op.label] = op.seconds;
    for (const OpTiming& op : step.alone.ops) {
      const auto it = busy.find(op.label);
      if (is_communication(op.kind) || it == busy.end()) continue;
      alone_s += op.seconds;
      busy_s += it->second;
    }
  }
  return alone_s > 0 && busy_s > 0 ? alone_s / busy_s : 1.0;
}

// The median over the steps of replicas side by side of their slowest replica's kernel time over
// the mean, at least 1. 1 without such steps.
static double slowest_core_kernel_time_factor(const Measurements& m) {
  std::vector<double> ratios;
  for (const StepMeasurement& step : m.compute)
    if (step.slowest_replica_kernel_ratio > 1) ratios.push_back(step.slowest_replica_kernel_ratio);
  return ratios.empty() ? 1.0 : std::max(1.0, median(ratios));
}

CalibrationResult fit_calibration(const Measurements& m, const DeviceProfile& base, DType precision) {
  CalibrationResult result;
  result.measurements = m;
  result.profile = base;

  std::vector<StepTiming> steps;
  std::map<std::string, std::vector<OpTiming>> by_class;
  for (const StepMeasurement& step : m.compute) {
    StepTiming timing{step.step_s, 0, 0};
    for (const OpTiming& op : step.ops) {
      timing.kernels_s += op.seconds;  // a step's communication is not launch overhead either
      if (is_communication(op.kind)) continue;
      ++timing.ops;
      by_class[op.kernel_class.empty() ? to_string(op.kind) : op.kernel_class].push_back(op);
    }
    steps.push_back(timing);
  }
  std::vector<double> gaps;
  for (const StepMeasurement& step : m.compute) {
    if (step.launch_gap_s > 0) gaps.push_back(step.launch_gap_s);
  }
  const Seconds launch_s = gaps.empty() ? fit_launch_overhead(steps) : median(gaps);
  if (!steps.empty()) result.profile.launch_overhead_s = launch_s;
  result.profile.core_handoff_s = m.core_switches.handoff_s;
  result.profile.core_wake_s = m.core_switches.wake_s;
  result.profile.alone_kernel_time_fraction = alone_kernel_time_fraction(m);
  result.profile.slowest_core_kernel_time_factor = slowest_core_kernel_time_factor(m);
  for (const auto& [name, ops] : by_class) {
    // OpTiming holds the kernel's own time: the launch overhead lies outside it.
    if (auto fit = fit_kind(ops.front().kind, ops, base, precision, /*launch_s=*/0)) {
      result.profile.efficiency_curves[name] = fit->curve;
      result.compute.push_back({name, *fit});
    }
  }

  std::map<std::pair<OpKind, int>, std::vector<Point>> comm_points;
  for (const StepMeasurement& step : m.comm) {
    for (const OpTiming& op : step.ops) {
      const OpKind kind = op.kind == OpKind::recv ? OpKind::send : op.kind;
      comm_points[{kind, op.group_size}].push_back({op.bytes, op.seconds});
    }
  }
  for (const auto& [key, points] : comm_points) {
    try {
      result.comm.push_back({key.first, key.second, fit_alpha_beta(points)});
    } catch (const std::invalid_argument&) {
      // Too few distinct sizes for this kind and group: nothing to report.
    }
  }
  // One device (a single GPU) has nothing to send to: its profile is fitted, its link is not.
  if (m.comm.empty() && !m.compute.empty()) return result;
  const auto send = std::find_if(result.comm.begin(), result.comm.end(), [](const CommFit& f) {
    return f.kind == OpKind::send && f.group_size == 2;
  });
  if (send == result.comm.end()) throw std::invalid_argument("calibration needs send/recv measurements");
  // A transfer also costs the backend's hand-offs around it (waking the stream's worker, waking
  // the host when it is done): the part of a send/recv step outside its transfers, per transfer.
  std::vector<double> handoffs;
  for (const StepMeasurement& step : m.comm) {
    Seconds transfers_s = 0;
    int count = 0;
    for (const OpTiming& op : step.ops) {
      if (op.kind != OpKind::send && op.kind != OpKind::recv) break;
      transfers_s += op.seconds;
      ++count;
    }
    if (count == static_cast<int>(step.ops.size()) && count > 0)
      handoffs.push_back(std::max(0.0, step.step_s - transfers_s) / count);
  }
  result.handoff_s = handoffs.empty() ? 0.0 : median(handoffs);
  result.intra_link = LinkSpec{send->fit.bandwidth_bytes_per_s, send->fit.latency_s + result.handoff_s};
  return result;
}

CalibrationResult calibrate(Microbenchmarks& bench, const DeviceProfile& base, const CalibrationOptions& o) {
  auto say = [&](const std::string& line) {
    if (o.progress) o.progress(line);
  };
  const int warmup = o.warmup;
  const int iterations = o.quick ? std::min(o.iterations, 3) : o.iterations;
  Measurements m;
  const int concurrent = std::max(1, bench.concurrent_devices());
  for (const Workload& w : compute_workloads(o.quick, o.precision, concurrent, bench.scale())) {
    m.compute.push_back(bench.measure(w, warmup, iterations));
    const auto classes = kernel_classes(w);
    for (OpTiming& op : m.compute.back().ops) {
      if (auto it = classes.find(op.label); it != classes.end()) op.kernel_class = it->second;
    }
    say(w.name + ": step " + std::to_string(m.compute.back().step_s * 1e3) + " ms");
  }
  // Cores that share caches and memory: the replicated workloads once more, one replica alone
  // (the same grid in the same order; the tensor-parallel pairs stay pairs and are skipped).
  if (concurrent > 1 && bench.scale() == WorkloadScale::cpu) {
    const std::vector<Workload> alone = compute_workloads(o.quick, o.precision, 1, bench.scale());
    for (std::size_t i = 0; i < alone.size() && i < m.compute.size(); ++i) {
      if (alone[i].strategy->world_size() != 1) continue;
      m.alone.push_back({i, bench.measure(alone[i], warmup, iterations)});
      say(alone[i].name + " alone: step " + std::to_string(m.alone.back().alone.step_s * 1e3) + " ms");
    }
  }
  m.core_switches = bench.measure_core_switches();
  const int max_group = o.max_group_size > 0 ? o.max_group_size : bench.max_devices();
  const std::vector<Bytes> sizes = comm_sizes_bytes(o.quick, bench.scale());
  for (OpKind kind : max_group >= 2 ? calibrated_comm_kinds() : std::vector<OpKind>{}) {
    for (int n = 2; n <= (kind == OpKind::send ? 2 : max_group); ++n) {
      const Workload w = comm_workload(kind, n, sizes);
      m.comm.push_back(bench.measure(w, warmup, iterations));
      say(w.name + ": done");
    }
  }
  return fit_calibration(m, base, o.precision);
}

std::vector<CollectiveCost> collective_costs(const CalibrationResult& result) {
  std::vector<CollectiveCost> costs;
  for (const CommFit& c : result.comm) {
    const BytesPerSecond bandwidth = c.fit.bandwidth_bytes_per_s;
    if (c.kind == OpKind::send || !(bandwidth > 0) || !std::isfinite(bandwidth)) continue;
    costs.push_back(CollectiveCost{to_string(c.kind), c.group_size, c.fit.latency_s, bandwidth});
  }
  return costs;
}

std::string describe(const CalibrationResult& r) {
  std::string text;
  char line[200];
  std::snprintf(line, sizeof line,
                "launch overhead  %.2f us per op; transfer hand-off %.2f us; core hand-off %.2f us, core wake-up %.2f us; "
                "kernels alone %.3fx, slowest core %.3fx\n",
                r.profile.launch_overhead_s * 1e6, r.handoff_s * 1e6, r.profile.core_handoff_s * 1e6,
                r.profile.core_wake_s * 1e6, r.profile.alone_kernel_time_fraction,
                r.profile.slowest_core_kernel_time_factor);
  text += line;
  for (const KindFit& k : r.compute) {
    std::snprintf(line, sizeof line, "%-22s bound %-6s  max efficiency %.3f  half work %.3g  rms error %.1f%% (%d ops)\n",
                  k.kernel_class.c_str(), to_string(k.fit.curve.bound), k.fit.curve.max_efficiency,
                  k.fit.curve.half_work, 100 * k.fit.rms_relative_error, k.fit.points_used);
    text += line;
  }
  for (const CommFit& c : r.comm) {
    std::snprintf(line, sizeof line, "%-15s n=%d  latency %.2f us  bandwidth %.2f GB/s  rms error %.1f%%\n",
                  to_string(c.kind), c.group_size, c.fit.latency_s * 1e6, c.fit.bandwidth_bytes_per_s / 1e9,
                  100 * c.fit.rms_relative_error);
    text += line;
  }
  return text;
}

std::string measurements_csv(const Measurements& m) {
  std::string csv = "set,step,label,kind,kernel_class,flops,bytes,group_size,seconds\n";
  auto rows = [&](const char* set, std::size_t step, const StepMeasurement& s) {
    for (const OpTiming& op : s.ops)
      csv += std::string(set) + "," + std::to_string(step) + "," + op.label + "," + to_string(op.kind) + "," +
             op.kernel_class + "," + printf_string("%.17g", op.flops) + "," + printf_string("%.17g", op.bytes) + "," +
             std::to_string(op.group_size) + "," + printf_string("%.9g", op.seconds) + "\n";
  };
  for (std::size_t i = 0; i < m.compute.size(); ++i) rows("compute", i, m.compute[i]);
  for (const AloneStep& a : m.alone) rows("alone", a.busy, a.alone);
  for (std::size_t i = 0; i < m.comm.size(); ++i) rows("comm", i, m.comm[i]);
  return csv;
}

}  // namespace tandem::calibration
