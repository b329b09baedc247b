#include "exec/cuda/calibration/cuda_microbenchmarks.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <limits>

#include "analysis/calibration/workloads.hpp"
#include "exec/common/step_measurement.hpp"
#include "exec/cpu/cpu_run.hpp"
#include "exec/cuda/cuda_run.hpp"
#include "kernels/cuda/check.hpp"
#include "strategies/null_runtime.hpp"

namespace tandem::exec::cuda {

CudaCalibrationBench::CudaCalibrationBench(int max_devices, kernels::cuda::MathMode math) : math_(math) {
  const int gpus = cuda_device_count();
  max_devices_ = std::max(1, max_devices > 0 ? std::min(max_devices, gpus) : gpus);
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  accelerator_ = prop.name;
}

CudaCalibrationBench::~CudaCalibrationBench() = default;

calibration::StepMeasurement CudaCalibrationBench::measure(const calibration::Workload& workload, int warmup,
                                                          int iterations) {
  if (!workload.model) return measure_communication(workload, warmup, iterations);  // comm_workload's
  // One GPU runs the step as `tandem run --backend cuda` would. Every gap between its kernels is
  // the backend's own (no thread to deschedule, no peer to wait for): all of them count.
  cpu::RunOptions options;
  cpu::configure_for_model(options, *workload.model, workload.seq_length);
  options.iterations = iterations;
  options.warmup_iterations = warmup;
  options.record_trace = true;
  CudaRunExtras extras;
  extras.math = math_;
  const cpu::RunResult run = run_cuda(*workload.strategy, options, extras);
  return step_from_trace(run, warmup, std::numeric_limits<double>::infinity());
}

calibration::StepMeasurement CudaCalibrationBench::measure_communication(const calibration::Workload& workload,
                                                                         int warmup, int iterations) {
  // Rank 0's communication of one step, as the strategy issues it, each op through NCCL.
  std::vector<CommOp> comm;
  NullRuntime recorder(workload.strategy->world_size());
  recorder.on_communicate = [&](const CommOp& op) { comm.push_back(op); };
  auto program = workload.strategy->program_for(0);
  program->setup(recorder);
  recorder.begin_iteration(0);
  program->train_step(recorder, 0);
  recorder.end_iteration();

  calibration::StepMeasurement step;
  for (const CommOp& op : comm) {
    const bool p2p = op.kind == OpKind::send || op.kind == OpKind::recv;
    const int members = p2p ? 2 : op.group.size();  // comm_workload's groups have 2 members or more
    if (!nccl_) {
      const std::vector<Bytes> sizes = calibration::comm_sizes_bytes(false, calibration::WorkloadScale::gpu);
      nccl_ = std::make_unique<NcclTimer>(max_devices_, *std::max_element(sizes.begin(), sizes.end()));
    }
    const Seconds s = nccl_->seconds(op.kind, op.bytes, members, warmup, iterations);
    step.ops.push_back({op.label, op.kind, "", 0, op.bytes, members, s});
    step.step_s += s;
  }
  return step;
}

}  // namespace tandem::exec::cuda
