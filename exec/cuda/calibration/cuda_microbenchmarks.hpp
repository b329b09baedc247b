// Calibration's microbenchmarks on GPUs (`tandem calibrate --backend cuda`), on the workloads of
// analysis/calibration/workloads.hpp at GPU scale:
//   compute   the workload's training steps run by `tandem run --backend cuda`'s own runtime
//             (run_cuda) on one GPU, every op timed by its CUDA events where the step placed it,
//             and the gaps between kernels (dispatch, the zero-fill of new tensors) measured as
//             the per-op launch overhead (exec/common/step_measurement.hpp). Timing each kernel
//             alone in a loop, as before 2026-12-04, missed those gaps: on an H200, 14.8 ms of a
//             182 ms GPT-2 124M step, which the fitted profile then predicted 31% fast.
//   comm      every collective and send/recv through NCCL among this process's GPUs
//             (nccl_timer.hpp).
#pragma once

#include <memory>

#include "analysis/calibration/microbenchmarks.hpp"
#include "exec/cuda/calibration/nccl_timer.hpp"
#include "kernels/cuda/gemm.cuh"

namespace tandem::exec::cuda {

class CudaCalibrationBench final : public calibration::Microbenchmarks {
 public:
  // `max_devices`: the largest communication group (0: every GPU this process sees).
  explicit CudaCalibrationBench(int max_devices = 0, kernels::cuda::MathMode math = kernels::cuda::MathMode::bf16);
  ~CudaCalibrationBench() override;
  std::string backend() const override { return "cuda"; }
  std::string accelerator() const override { return accelerator_; }
  int max_devices() const override { return max_devices_; }
  int concurrent_devices() const override { return 1; }  // compute steps run on one GPU
  calibration::WorkloadScale scale() const override { return calibration::WorkloadScale::gpu; }
  calibration::StepMeasurement measure(const calibration::Workload& workload, int warmup, int iterations) override;

 private:
  calibration::StepMeasurement measure_communication(const calibration::Workload& workload, int warmup,
                                                     int iterations);
  int max_devices_ = 1;
  kernels::cuda::MathMode math_;
  std::string accelerator_;
  std::unique_ptr<NcclTimer> nccl_;
};

}  // namespace tandem::exec::cuda
