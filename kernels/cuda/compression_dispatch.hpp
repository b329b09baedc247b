// The CUDA backend's entry into the gradient-compression kernels (compression.cuh): runs one
// codec op (CodecArgs, strategies/compression/codec_args.hpp) on the context's stream, with the
// tensor conventions of kernels/cpu/compression_dispatch.hpp, so one op gives the CPU backend's
// numbers. Called by kernels/cuda/dispatch.cpp.
#pragma once

#include "kernels/cuda/dispatch.hpp"
#include "kernels/op_args.hpp"

namespace tandem::kernels::cuda {

void run_codec(const OpTensors& tensors, const CodecArgs& args, const StreamContext& context);

}  // namespace tandem::kernels::cuda
