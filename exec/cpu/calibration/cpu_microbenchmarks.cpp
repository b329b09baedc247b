#include "exec/cpu/calibration/cpu_microbenchmarks.hpp"

#include <algorithm>

#include "common/usable_cores.hpp"
#include "exec/common/step_measurement.hpp"
#include "exec/cpu/calibration/thread_handoff.hpp"
#include "exec/cpu/cpu_run.hpp"
#include "strategies/models/mlp.hpp"

namespace tandem::exec::cpu {

namespace {

constexpr double kLongestOwnGap_s = 50e-6;

// run_cpu needs a data source even for workloads that read no data (communication only).
std::shared_ptr<const DataSource> placeholder_data() {
  MlpConfig c;
  c.input_size = 1;
  c.hidden_sizes = {1};
  c.output_size = 2;
  return make_data_source(MlpModel(c), 1);
}

}  // namespace

CpuMicrobenchmarks::CpuMicrobenchmarks(int max_devices)
    : max_devices_(max_devices > 0 ? max_devices
                                   : std::max(2, usable_cores())) {}

int CpuMicrobenchmarks::concurrent_devices() const {
  return usable_cores();
}

calibration::CoreSwitchCosts CpuMicrobenchmarks::measure_core_switches() {
  calibration::CoreSwitchCosts costs;
  costs.handoff_s = measure_busy_handoff_s(concurrent_devices());
  costs.wake_s = measure_idle_wake_s();
  return costs;
}

calibration::StepMeasurement CpuMicrobenchmarks::measure(const calibration::Workload& workload,
                                                         int warmup, int iterations) {
  RunOptions options;
  if (workload.model) {
    configure_for_model(options, *workload.model, workload.seq_length);
  } else {
    options.data = placeholder_data();
  }
  options.iterations = iterations;
  options.warmup_iterations = warmup;
  options.record_trace = true;
  const RunResult run = run_cpu(*workload.strategy, options);
  // A gap of kLongestOwnGap_s or more is the rank's thread descheduled (a time slice is a
  // millisecond or so) or waiting for a peer: not the op's.
  return step_from_trace(run, warmup, kLongestOwnGap_s);
}

}  // namespace tandem::exec::cpu
