#include "exec/cuda/calibration/cuda_microbenchmarks.hpp"

#include <cuda_runtime.h>

#include <algorithm>

#include "analysis/calibration/workloads.hpp"
#include "exec/cuda/cuda_run.hpp"
#include "kernels/cuda/check.hpp"
#include "strategies/null_runtime.hpp"

namespace tandem::exec::cuda {

CudaCalibrationBench::CudaCalibrationBench(int max_devices, kernels::cuda::MathMode math) : kernels_(math, 0) {
  const int gpus = cuda_device_count();
  max_devices_ = std::max(1, max_devices > 0 ? std::min(max_devices, gpus) : gpus);
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  accelerator_ = prop.name;
}

CudaCalibrationBench::~CudaCalibrationBench() = default;

calibration::StepMeasurement CudaCalibrationBench::measure(const calibration::Workload& workload, int warmup,
                                                          int iterations) {
  // Rank 0's ops of one step, as the strategy issues them.
  std::vector<ComputeOp> compute;
  std::vector<CommOp> comm;
  NullRuntime recorder(workload.strategy->world_size());
  recorder.on_compute = [&](const ComputeOp& op) { compute.push_back(op); };
  recorder.on_communicate = [&](const CommOp& op) { comm.push_back(op); };
  auto program = workload.strategy->program_for(0);
  program->setup(recorder);
  recorder.begin_iteration(0);
  program->train_step(recorder, 0);
  recorder.end_iteration();

  calibration::StepMeasurement step;
  if (launch_gap_s_ < 0) launch_gap_s_ = kernels_.launch_gap_seconds();
  for (const ComputeOp& op : compute) {
    const Seconds s = kernels_.measure_seconds(op, iterations, warmup);
    step.ops.push_back({op.label, op.kind, "", op.flops, op.bytes, 0, s});
    step.step_s += s + launch_gap_s_;
  }
  for (const CommOp& op : comm) {
    const bool p2p = op.kind == OpKind::send || op.kind == OpKind::recv;
    const int members = p2p ? 2 : op.group.size();
    if (members < 2) {  // a one-replica workload's gradient all-reduce: nothing moves (the simulator's 0 too)
      step.ops.push_back({op.label, op.kind, "", 0, op.bytes, members, 0.0});
      continue;
    }
    if (!nccl_) {
      const std::vector<Bytes> sizes = calibration::comm_sizes_bytes(false, calibration::WorkloadScale::gpu);
      nccl_ = std::make_unique<NcclTimer>(max_devices_, *std::max_element(sizes.begin(), sizes.end()));
    }
    const Seconds s = nccl_->seconds(op.kind, op.bytes, members, warmup, iterations);
    step.ops.push_back({op.label, op.kind, "", 0, op.bytes, members, s});
    step.step_s += s;
  }
  step.launch_gap_s = launch_gap_s_;
  return step;
}

}  // namespace tandem::exec::cuda
