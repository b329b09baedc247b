// The CPU backend's entry into the gradient-compression kernels: runs one codec op
// (CodecArgs, strategies/compression/codec_args.hpp, which states each step's tensors) with the
// kernels of compression_quantize.hpp, compression_topk.hpp, compression_lowrank.hpp. Called by
// kernels/cpu/dispatch.cpp; a tensor too small for the step's arguments throws std::logic_error
// naming the op (kernels/op_args.hpp).
//
// Block tables (int32 tensors) hold raw 32-bit words in their fp32 storage, as token ids do.
// A list of gradient tensors is read and written as the concatenation of their elements.
#pragma once

#include "kernels/op_args.hpp"

namespace tandem::kernels::cpu {

void run_codec(const OpTensors& tensors, const CodecArgs& args);

}  // namespace tandem::kernels::cpu
