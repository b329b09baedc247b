// Calibration's microbenchmarks on the CPU backend: each workload (analysis/calibration/
// workloads.hpp) is trained for real by run_cpu (ranks as threads, OpenBLAS and the reference
// kernels, shared-memory collectives) with its trace recorded, and every op's duration is read
// from the trace: the kernels are timed exactly as `tandem run --backend cpu` times them, inside
// the same dispatch path.
#pragma once

#include "analysis/calibration/microbenchmarks.hpp"

namespace tandem::exec::cpu {

class CpuMicrobenchmarks final : public calibration::Microbenchmarks {
 public:
  // `max_devices`: the largest group the communication workloads may use (0: the number of CPU
  // cores, at least 2; more ranks than cores share them, as they would in a run).
  explicit CpuMicrobenchmarks(int max_devices = 0);
  std::string backend() const override { return "cpu"; }
  std::string accelerator() const override { return ""; }
  int max_devices() const override { return max_devices_; }
  int concurrent_devices() const override;  // the CPU cores
  calibration::StepMeasurement measure(const calibration::Workload& workload, int warmup,
                                       int iterations) override;
  calibration::CoreSwitchCosts measure_core_switches() override;  // thread_handoff.hpp

 private:
  int max_devices_;
};

}  // namespace tandem::exec::cpu
