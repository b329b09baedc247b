// A device whose costs are known, for calibration tests: every compute op of a workload is timed
// by the simulator's cost model (sim/cost_model.hpp) under a "true" profile, communication by a
// true function of kind, bytes and group size (an alpha-beta link unless given); calibrate()
// must find the truth again. The same device plays a CPU (small grids, ranks beside each other)
// or a GPU (GPU-sized grids, NCCL-shaped collectives).
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "analysis/calibration/microbenchmarks.hpp"
#include "analysis/calibration/workloads.hpp"
#include "platforms/kernel_class.hpp"
#include "sim/cost_model.hpp"
#include "strategies/null_runtime.hpp"

namespace tandem::calibration {

// Rank 0's ops of one step of a workload.
struct StepOps {
  std::vector<ComputeOp> compute;
  std::vector<CommOp> comm;
};
inline StepOps ops_of(const Workload& w) {
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
  // A replica alone runs its kernels in this fraction of their time beside busy neighbours.
  double alone_kernel_time_fraction = 1;
  // Replicas side by side: the slowest one's kernel time over their mean.
  double slowest_replica_kernel_ratio = 1;
  // Communication time by kind (send for send/recv), payload and group size; null: the link above.
  std::function<Seconds(OpKind, Bytes, int)> comm_seconds;
};

struct DeviceShape {
  std::string backend = "simulated";
  WorkloadScale scale = WorkloadScale::cpu;
  int max_devices = 3;
  int concurrent_devices = 2;
};

class SimulatedDevice final : public Microbenchmarks {
 public:
  SimulatedDevice(Truth truth, double noise, DeviceShape shape = {})
      : truth_(std::move(truth)), noise_(noise), shape_(std::move(shape)) {}
  std::string backend() const override { return shape_.backend; }
  std::string accelerator() const override { return ""; }
  int max_devices() const override { return shape_.max_devices; }
  int concurrent_devices() const override { return shape_.concurrent_devices; }
  WorkloadScale scale() const override { return shape_.scale; }
  CoreSwitchCosts measure_core_switches() override { return truth_.core_switches; }
  StepMeasurement measure(const Workload& w, int, int) override {
    const StepOps ops = ops_of(w);
    StepMeasurement step;
    const bool alone = w.strategy->world_size() == 1 && shape_.concurrent_devices > 1;
    for (const ComputeOp& op : ops.compute) {
      const Seconds kernel = (sim::compute_cost(op, truth_.profile).seconds - truth_.profile.launch_overhead_s) *
                             (alone ? truth_.alone_kernel_time_fraction : 1.0);
      step.ops.push_back({op.label, op.kind, "", op.flops, op.bytes, 0, kernel * jitter()});
      step.step_s += kernel + truth_.profile.launch_overhead_s;
    }
    for (const CommOp& op : ops.comm) {
      const bool p2p = op.kind == OpKind::send || op.kind == OpKind::recv;
      const int members = p2p ? 2 : op.group.size();
      const Seconds t = truth_.comm_seconds ? truth_.comm_seconds(p2p ? OpKind::send : op.kind, op.bytes, members)
                                            : truth_.latency_s + op.bytes / truth_.bandwidth_bytes_per_s;
      step.ops.push_back({op.label, op.kind, "", 0, op.bytes, members, t * jitter()});
      step.step_s += t;
    }
    step.launch_gap_s = truth_.profile.launch_overhead_s;
    if (w.strategy->world_size() > 1) step.slowest_replica_kernel_ratio = truth_.slowest_replica_kernel_ratio;
    return step;
  }

 private:
  double jitter() {
    if (noise_ == 0) return 1.0;
    return 1.0 + noise_ * (2.0 * (rng_() / double(rng_.max())) - 1.0);
  }
  Truth truth_;
  double noise_;
  DeviceShape shape_;
  std::mt19937 rng_{42};
};

// Every kernel class `workloads` issue, with a curve of its own on its kind's usual side
// (elementwise kernels' FLOPs are a fixed multiple of their bytes, so either side explains them
// equally and calibration keeps the usual one). `half_work_scale` sizes the fixed costs (1 for a
// CPU's kernels; a GPU's fill its SMs only from far larger sizes).
inline Truth make_truth_for(const std::string& base, const std::vector<Workload>& workloads, Seconds launch_s,
                            double half_work_scale) {
  Truth t;
  t.profile = find_device_profile(base);
  t.profile.launch_overhead_s = launch_s;
  std::set<std::string> classes;
  for (const Workload& w : workloads) {
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
    c.half_work = (flops ? 2e5 : 8e3) * half_work_scale * (1 + i % 5);
    t.profile.efficiency_curves[cls] = c;
    ++i;
  }
  return t;
}

// Every curve of the truth found again, on the same side, within `tolerance` (relative).
template <class Result>
void expect_curves_recovered(const Truth& truth, const Result& r, double tolerance) {
  ASSERT_EQ(r.profile.efficiency_curves.size(), truth.profile.efficiency_curves.size());
  for (const auto& [cls, expected] : truth.profile.efficiency_curves) {
    const auto it = r.profile.efficiency_curves.find(cls);
    ASSERT_NE(it, r.profile.efficiency_curves.end()) << cls;
    EXPECT_EQ(it->second.bound, expected.bound) << cls;
    EXPECT_NEAR(it->second.max_efficiency / expected.max_efficiency, 1.0, tolerance) << cls;
    EXPECT_NEAR(it->second.half_work / expected.half_work, 1.0, tolerance) << cls;
  }
}

}  // namespace tandem::calibration
