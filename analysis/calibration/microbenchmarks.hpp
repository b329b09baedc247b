// What calibration asks of a backend: run a small workload on the real machine and say how long
// each of its ops took. The workloads themselves (analysis/calibration/workloads.hpp) are
// strategies written against the per-rank interface, so every backend runs the very kernels and
// collectives a training step issues, with the real backend's dispatch path around them. A
// backend implements this one interface (exec/cpu/calibration/cpu_microbenchmarks.hpp for the
// CPU; a CUDA one runs the same workloads on GPUs) and calibrate() does the rest.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/units.hpp"
#include "strategies/model.hpp"
#include "strategies/op.hpp"
#include "strategies/strategy.hpp"

namespace tandem::calibration {

// A strategy to measure. `model` is what it trains (the backend may need it for input data);
// null for communication-only workloads, which read no data.
struct Workload {
  std::string name;
  std::shared_ptr<const Strategy> strategy;
  std::shared_ptr<const Model> model;
  std::int64_t seq_length = 1;
};

// One op of the workload's step (identified by its label), timed. A compute op run by several
// replicas: the median over them.
struct OpTiming {
  std::string label;
  OpKind kind = OpKind::gemm;
  // Compute: the kernel class (platforms/kernel_class.hpp), filled by calibrate() from the
  // workload; "" means the kind's name.
  std::string kernel_class;
  Flops flops = 0;
  Bytes bytes = 0;     // compute: bytes moved; communication: the payload (CommOp::bytes)
  int group_size = 0;  // communication: devices in the group (2 for send/recv)
  // Compute: the kernel's duration. Communication: from the moment the last member joined to the
  // completion (the transfer itself, not the wait for late peers), i.e. the shortest duration
  // among the members.
  Seconds seconds = 0;
};

// A workload's step as measured: every op of the step (median over the measured iterations) and
// the step's wall time (median over the same iterations).
struct StepMeasurement {
  std::vector<OpTiming> ops;
  Seconds step_s = 0;
  // The backend's own time between one kernel's end and the next one's start on the compute
  // stream (dispatch, bookkeeping, allocation), per op: the mean gap, less the gaps where the
  // thread was descheduled or waited for a peer. 0 when the backend cannot tell; calibrate()
  // then charges the step's time outside kernels to its ops.
  Seconds launch_gap_s = 0;
  // Replicas side by side: the slowest replica's kernel time over the replicas' mean (1 for one
  // replica, or when the backend cannot tell). Cores of one machine are not equally fast (a
  // hypervisor's vCPUs, SMT siblings, interrupts on one core): op timings take the replicas'
  // median, a step that waits for every rank runs at the slowest's pace.
  double slowest_replica_kernel_ratio = 1;
};

// What it costs to pass a core between two threads of one process (CPU backends whose ranks are
// threads and outnumber the cores): DeviceProfile::core_handoff_s and core_wake_s.
struct CoreSwitchCosts {
  Seconds handoff_s = 0;  // to a thread waiting on the same core: a context switch
  Seconds wake_s = 0;     // to a thread on an idle core: the core resumes (an interrupt, on a VM an exit)
};

// The sizes of calibration's grids (workloads.hpp): a CPU measures small steps (seconds in all);
// a GPU the sizes training issues on it (hidden 1024-4096, messages up to 256 MiB), since small
// ops there time the launch, not the kernel.
enum class WorkloadScale { cpu, gpu };

class Microbenchmarks {
 public:
  virtual ~Microbenchmarks() = default;
  virtual std::string backend() const = 0;            // "cpu", "cuda"
  virtual std::string accelerator() const = 0;        // GPU name; "" for the CPU backend
  virtual int max_devices() const = 0;                // largest group a workload may use
  // Devices that compute at once in a real run without sharing a processor (a CPU's cores, a
  // node's GPUs): compute workloads run that many replicas side by side, so kernels are timed
  // with their neighbours busy (shared caches, memory bandwidth, clocks), as in training.
  virtual int concurrent_devices() const = 0;
  // Runs `warmup` + `iterations` steps of the workload; medians over the last `iterations`.
  virtual StepMeasurement measure(const Workload& workload, int warmup, int iterations) = 0;
  // Backends whose devices share cores measure the cost of passing one; others have none.
  virtual CoreSwitchCosts measure_core_switches() { return {}; }
  virtual WorkloadScale scale() const { return WorkloadScale::cpu; }
};

}  // namespace tandem::calibration
