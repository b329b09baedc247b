// Calibration against a simulated device whose efficiencies are known: every op of every workload
// is timed by the simulator's cost model (sim/cost_model.hpp) under a "true" profile, transfers by
// a true alpha-beta link; calibrate() must find the truth again.
#include "analysis/calibration/calibrate.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <set>

#include "analysis/calibration/workloads.hpp"
#include "platforms/kernel_class.hpp"
#include "sim/cost_model.hpp"
#include "strategies/null_runtime.hpp"

namespace tandem::calibration {
namespace {

// Rank 0's ops of one step of a workload.
struct StepOps {
  std::vector<ComputeOp> compute;
  std::vector<CommOp> comm;
};
StepOps ops_of(const Workload& w) {
  StepOps ops;
  NullRuntime rt(w.strategy->world_size());
  rt.on_compute = [&](const ComputeOp& op) { ops.compute.push_back(op); };
  rt.on_communicate = [&](const CommOp& op) { ops.comm.push_back(op); };
  auto program = w.strategy->program_for(0);
  program->setup(rt);
  program->train_step(rt, 0);
  return ops;
}

struct Truth {
  DeviceProfile profile;
  Seconds latency_s = 4e-6;
  BytesPerSecond bandwidth_bytes_per_s = 20e9;
  CoreSwitchCosts core_switches{3e-6, 20e-6};
};

class SimulatedDevice final : public Microbenchmarks {
 public:
  SimulatedDevice(Truth truth, double noise) : truth_(std::move(truth)), noise_(noise) {}
  std::string backend() const override { return "simulated"; }
  std::string accelerator() const override { return ""; }
  int max_devices() const override { return 3; }
  int concurrent_devices() const override { return 2; }
  CoreSwitchCosts measure_core_switches() override { return truth_.core_switches; }
  StepMeasurement measure(const Workload& w, int, int) override {
    const StepOps ops = ops_of(w);
    StepMeasurement step;
    for (const ComputeOp& op : ops.compute) {
      const Seconds kernel = sim::compute_cost(op, truth_.profile).seconds - truth_.profile.launch_overhead_s;
      step.ops.push_back({op.label, op.kind, "", op.flops, op.bytes, 0, kernel * jitter()});
      step.step_s += kernel + truth_.profile.launch_overhead_s;
    }
    for (const CommOp& op : ops.comm) {
      const bool p2p = op.kind == OpKind::send || op.kind == OpKind::recv;
      const Seconds t = truth_.latency_s + op.bytes / truth_.bandwidth_bytes_per_s;
      step.ops.push_back({op.label, op.kind, "", 0, op.bytes, p2p ? 2 : op.group.size(), t * jitter()});
      step.step_s += t;
    }
    step.launch_gap_s = truth_.profile.launch_overhead_s;
    return step;
  }

 private:
  double jitter() {
    if (noise_ == 0) return 1.0;
    return 1.0 + noise_ * (2.0 * (rng_() / double(rng_.max())) - 1.0);
  }
  Truth truth_;
  double noise_;
  std::mt19937 rng_{42};
};

// Every kernel class the workloads issue, with a curve of its own on its kind's usual side
// (elementwise kernels' FLOPs are a fixed multiple of their bytes, so either side explains them
// equally and calibration keeps the usual one).
Truth make_truth() {
  Truth t;
  t.profile = find_device_profile("cpu-generic");
  t.profile.launch_overhead_s = 1.5e-6;
  std::set<std::string> classes;
  for (const Workload& w : compute_workloads(/*quick=*/false)) {
    for (const auto& [label, cls] : kernel_classes(w)) classes.insert(cls);
  }
  int i = 0;
  for (const std::string& cls : classes) {
    OpKind kind;
    EXPECT_TRUE(kernel_class_kind(cls, kind)) << cls;
    const bool flops = kind == OpKind::gemm || kind == OpKind::attention;
    EfficiencyCurve c;
    c.bound = flops ? BoundSide::flops : BoundSide::memory;
    c.max_efficiency = 0.3 + 0.05 * (i % 12);
    c.half_work = (flops ? 2e5 : 8e3) * (1 + i % 5);
    t.profile.efficiency_curves[cls] = c;
    ++i;
  }
  return t;
}

TEST(Calibrate, RecoversKnownEfficiencyCurvesLaunchOverheadAndLinkWithinTwoPercent) {
  const Truth truth = make_truth();
  SimulatedDevice device(truth, 0.0);
  CalibrationOptions options;
  const CalibrationResult r = calibrate(device, find_device_profile("cpu-generic"), options);
  EXPECT_NEAR(r.profile.launch_overhead_s / truth.profile.launch_overhead_s, 1.0, 0.02);
  ASSERT_EQ(r.profile.efficiency_curves.size(), truth.profile.efficiency_curves.size());
  for (const auto& [cls, expected] : truth.profile.efficiency_curves) {
    const auto it = r.profile.efficiency_curves.find(cls);
    ASSERT_NE(it, r.profile.efficiency_curves.end()) << cls;
    EXPECT_EQ(it->second.bound, expected.bound) << cls;
    EXPECT_NEAR(it->second.max_efficiency / expected.max_efficiency, 1.0, 0.02) << cls;
    EXPECT_NEAR(it->second.half_work / expected.half_work, 1.0, 0.02) << cls;
  }
  EXPECT_NEAR(r.intra_link.latency_s / truth.latency_s, 1.0, 0.02);
  EXPECT_NEAR(r.intra_link.bandwidth_bytes_per_s / truth.bandwidth_bytes_per_s, 1.0, 0.02);
  // The costs of passing a core between ranks' threads go into the profile as measured.
  EXPECT_EQ(r.profile.core_handoff_s, truth.core_switches.handoff_s);
  EXPECT_EQ(r.profile.core_wake_s, truth.core_switches.wake_s);
}

// Without noise the fit is exact (above). Under +-3% uniform jitter the worst of ~1000 ops and the
// link land 1.5-2.3% off over seeds 1, 7, 42, 99 and 1234: the bound is 2.5%.
TEST(Calibrate, PredictsEveryOpWithinTwoAndAHalfPercentDespiteThreePercentJitter) {
  const Truth truth = make_truth();
  SimulatedDevice device(truth, 0.03);
  CalibrationOptions options;
  const CalibrationResult r = calibrate(device, find_device_profile("cpu-generic"), options);
  // Parameters of a curve trade off against each other under noise; what must hold is the time
  // they give to the ops training issues.
  for (const Workload& w : compute_workloads(false)) {
    for (const ComputeOp& op : ops_of(w).compute) {
      const double expected = sim::compute_cost(op, truth.profile).seconds;
      const double fitted = sim::compute_cost(op, r.profile).seconds;
      EXPECT_NEAR(fitted / expected, 1.0, 0.025) << w.name << " " << op.label << " (" << kernel_class(op) << ")";
    }
  }
  EXPECT_NEAR(r.intra_link.bandwidth_bytes_per_s / truth.bandwidth_bytes_per_s, 1.0, 0.025);
}

TEST(Calibrate, IsDeterministic) {
  const Truth truth = make_truth();
  SimulatedDevice a(truth, 0.03), b(truth, 0.03);
  const CalibrationResult ra = calibrate(a, find_device_profile("cpu-generic"), {});
  const CalibrationResult rb = calibrate(b, find_device_profile("cpu-generic"), {});
  ASSERT_EQ(ra.compute.size(), rb.compute.size());
  for (std::size_t i = 0; i < ra.compute.size(); ++i) {
    EXPECT_EQ(ra.compute[i].fit.curve.max_efficiency, rb.compute[i].fit.curve.max_efficiency);
    EXPECT_EQ(ra.compute[i].fit.curve.half_work, rb.compute[i].fit.curve.half_work);
  }
  EXPECT_EQ(ra.intra_link.latency_s, rb.intra_link.latency_s);
}

TEST(Calibrate, RefusesToFitWithoutPointToPointTransfers) {
  Measurements none;
  EXPECT_THROW(fit_calibration(none, find_device_profile("cpu-generic")), std::invalid_argument);
}

}  // namespace
}  // namespace tandem::calibration
