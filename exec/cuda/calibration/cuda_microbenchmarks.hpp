// Calibration's microbenchmarks on GPUs (`tandem calibrate --backend cuda`): each workload
// (analysis/calibration/workloads.hpp, GPU scale) is walked on a recording runtime; every compute
// op rank 0 issues is run alone through the CUDA kernels and timed with CUDA events
// (exec/cuda/microbenchmarks.hpp: the same kernels `tandem run --backend cuda` dispatches), every
// collective and send/recv through NCCL among this process's GPUs (nccl_timer.hpp). The launch
// gap (host cost per kernel) is measured once and reported with every step, so calibrate() fits
// the launch overhead from it.
#pragma once

#include <memory>

#include "analysis/calibration/microbenchmarks.hpp"
#include "exec/cuda/calibration/nccl_timer.hpp"
#include "exec/cuda/microbenchmarks.hpp"

namespace tandem::exec::cuda {

class CudaCalibrationBench final : public calibration::Microbenchmarks {
 public:
  // `max_devices`: the largest communication group (0: every GPU this process sees).
  explicit CudaCalibrationBench(int max_devices = 0, kernels::cuda::MathMode math = kernels::cuda::MathMode::bf16);
  ~CudaCalibrationBench() override;
  std::string backend() const override { return "cuda"; }
  std::string accelerator() const override { return accelerator_; }
  int max_devices() const override { return max_devices_; }
  int concurrent_devices() const override { return 1; }  // kernels are timed on one GPU, alone
  calibration::WorkloadScale scale() const override { return calibration::WorkloadScale::gpu; }
  calibration::StepMeasurement measure(const calibration::Workload& workload, int warmup, int iterations) override;

 private:
  int max_devices_ = 1;
  std::string accelerator_;
  CudaMicrobenchmarks kernels_;
  double launch_gap_s_ = -1;  // measured on first use
  std::unique_ptr<NcclTimer> nccl_;
};

}  // namespace tandem::exec::cuda
