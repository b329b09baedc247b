// Runs any compute op (strategies/op.hpp) with the CUDA kernels, on one stream: the CUDA
// backend's one entry point into kernels/cuda/. The tensor conventions, the storage contract
// (every tensor fp32 storage; int32 ids raw; masks as bytes in the storage) and the per-op choices
// (dropout probabilities and keys, the loss mean, broadcast add, the ZeRO optimizer offset, ...)
// are exactly those of kernels/cpu/dispatch.hpp, so one op gives the same numbers on both
// backends (to rounding; bit for bit for masks). `data(tensor)` returns DEVICE pointers.
// Errors (a tensor too small, an unsupported combination) throw std::logic_error naming the op;
// a failing CUDA call throws CudaError (kernels/cuda/check.hpp).
#pragma once

#include <cuda_runtime.h>

#include <functional>

#include "kernels/cpu/dispatch.hpp"
#include "kernels/cuda/attention.cuh"
#include "kernels/cuda/gemm.cuh"
#include "strategies/op.hpp"

namespace tandem::kernels::cuda {

using TensorData = std::function<float*(const Tensor&)>;
using RunOptions = kernels::cpu::RunOptions;  // seed, iteration, dropout probabilities, scale factor

struct StreamContext {
  cudaStream_t stream = nullptr;
  Blas* blas = nullptr;
  Workspace workspace;  // device scratch, valid until the next request
};

void run(const ComputeOp& op, const TensorData& data, const RunOptions& options, const StreamContext& context);

}  // namespace tandem::kernels::cuda
