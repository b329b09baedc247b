// The CUDA backend's entry into the mixture-of-experts kernels (moe.cuh): runs one MoE op
// (MoeArgs, strategies/op.hpp) on the context's stream, with the tensor conventions of
// kernels/cpu/dispatch.cpp's MoE branch, so one op gives the CPU backend's numbers. Called by
// kernels/cuda/dispatch.cpp.
#pragma once

#include "kernels/cuda/dispatch.hpp"
#include "kernels/op_args.hpp"

namespace tandem::kernels::cuda {

// `options.router_load`, when set, gets the routing's expert picks (copied to the host), as on the CPU.
void run_moe(const OpTensors& tensors, const MoeArgs& args, const RunOptions& options, const StreamContext& context);

}  // namespace tandem::kernels::cuda
