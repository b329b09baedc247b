// GPU timings of single ops for calibration (`tandem calibrate --backend cuda`): runs one
// ComputeOp (any kind strategies/ops.hpp makes, on tensors it allocates and fills itself) through
// the CUDA kernels, warm-up first, then times `repeats` runs with CUDA events and returns the
// median seconds per run. The calibration framework sweeps shapes (GEMMs, memory-bound element-
// wise ops, attention) through measure_seconds() and fits the device profile to the timings.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "kernels/cuda/gemm.cuh"
#include "strategies/op.hpp"

namespace tandem::exec::cuda {

class CudaMicrobenchmarks {
 public:
  explicit CudaMicrobenchmarks(kernels::cuda::MathMode math = kernels::cuda::MathMode::bf16, int device = 0);
  ~CudaMicrobenchmarks();
  CudaMicrobenchmarks(const CudaMicrobenchmarks&) = delete;
  CudaMicrobenchmarks& operator=(const CudaMicrobenchmarks&) = delete;

  // Median seconds of one run of `op` (its tensors are allocated from their shapes, filled with
  // small values; int32 inputs get valid ids 0). Throws for an op the kernels do not run.
  double measure_seconds(const ComputeOp& op, int repeats = 20, int warmup = 3);
  // Convenience shapes.
  double gemm_seconds(std::int64_t m, std::int64_t n, std::int64_t k, int repeats = 20);
  double copy_seconds(std::int64_t bytes, int repeats = 20);  // device-to-device memcpy op

 private:
  struct State;
  std::unique_ptr<State> state_;
  // Allocates and fills `op`'s tensors, calls `body` with a launcher of one run of the op on the
  // stream, frees them; returns body's result.
  double with_op(const ComputeOp& op, const std::function<double(const std::function<void()>&)>& body);
};

}  // namespace tandem::exec::cuda
