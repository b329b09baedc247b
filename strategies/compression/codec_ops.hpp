// Builders of the codec ops (CodecArgs, codec_args.hpp) and their costs: the one place where an
// encode or decode step's FLOPs and bytes come from, as strategies/ops.hpp is for the others.
// The simulator prices a codec op as a memory-bound kernel from these bytes; the CPU backend
// runs it (kernels/cpu/compression_dispatch.hpp).
//
// Cost conventions (bytes read + written in device memory, each tensor at its dtype's size;
// n = args.numel):
//   pack / unpack      the gradients once, x once (twice when pack accumulates: error feedback);
//                      FLOPs: n when pack accumulates, else 0.
//   quantize           x twice (one pass for the chunk's scale, one to encode), the rows
//                      written, the residual written with error feedback; FLOPs: 3 per element
//                      (abs and max/sum, scale, round), +1 with error feedback (the subtraction).
//   dequantize_sum     the rows read, y read and written; FLOPs 2 per decoded element.
//   dequantize_concat  the rows read, the gradients written; FLOPs 1 per element.
//   top_k              x read kTopKPasses times: a radix select over 32-bit keys with 8-bit
//                      digits reads its input once per digit (4) and once more to gather the
//                      winners; the row (2k words) written, k residual entries zeroed.
//                      FLOPs: one comparison per element and pass.
//   scatter_sum        the gradients written (zeroed), each row's k pairs read and k gradient
//                      entries read and written; FLOPs: 1 per pair.
//   orthogonalize      modified Gram-Schmidt on [rows, c]: per column a norm pass and a scaling
//                      pass, per later column a dot and an update pass over rows entries:
//                      words = rows·(3c + 5·c(c−1)/2) of 4 bytes; FLOPs rows·(3c + 4·c(c−1)/2).
//   gaussian           the output written; its transcendental functions are not counted as
//                      FLOPs (it runs once per training run, to seed PowerSGD's Q).
//   subtract_scaled    d read, x read and written; FLOPs 2 per element.
#pragma once

#include <string>
#include <vector>

#include "strategies/ops.hpp"

namespace tandem::codec_ops {

inline constexpr int kTopKPasses = 5;

// FLOPs of a codec step from its arguments alone.
Flops codec_flops(const CodecArgs& args);
// FLOPs and bytes of a codec step with its tensors (their dtypes set the bytes).
ops::Cost codec_cost(const CodecArgs& args, const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs);

// Issues one codec op (kind elementwise, compute stream, fp32 math).
Handle codec(Runtime& rt, Phase phase, std::string label, const CodecArgs& args, std::vector<Tensor> inputs,
             std::vector<Tensor> outputs, const Issue& issue = {});

}  // namespace tandem::codec_ops
