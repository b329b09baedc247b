// CPU reference kernels of the quantizing gradient codecs (strategies/compression/): rounding
// to fp16 / bf16 (PyTorch DDP's fp16_compress_hook / bf16_compress_hook), and per-chunk
// quantization to int8 or to signs with error feedback (the rows of a block table,
// strategies/compression/codec_args.hpp).
//
// Values stay in fp32 storage (the CPU backend stores every tensor as fp32); "rounding to fp16"
// means the fp32 value of the nearest fp16 number (round to nearest even), so that the real
// precision loss happens while the wire carries the 2-byte size the simulator prices.
//
// Quantized rows, one per chunk of `chunk` elements (the last chunk may hold fewer valid ones):
//   int8  scale = max|x| / 127; code = round(x / scale) in [-127, 127]; decode = code · scale.
//         Symmetric absmax quantization: |decode − x| <= scale / 2 for every element.
//   sign  scale = mean |x| (the l1 norm over the valid elements); code = sign bit;
//         decode = ±scale. mean|x| minimises ||x − a·sign(x)||₂ over a: the scaled sign
//         compressor of EF-SignSGD (Karimireddy et al. 2019, arXiv 1901.09847, Alg. 1), as
//         1-bit Adam (Tang et al. 2021, arXiv 2102.02888) compresses with error feedback.
// A row's first word holds the scale's fp32 bits; codes follow, packed little-endian.
#pragma once

#include <cstdint>

#include "strategies/compression/codec_args.hpp"

namespace tandem::kernels::cpu {

// The fp32 value of the nearest number of `format` (fp16 / bf16; fp32 returns x).
float round_to_format(float x, CodecFormat format);
void round_to_format(float* x, std::int64_t n, CodecFormat format);

// Encodes the `valid` first elements of x (<= chunk) into one row of `row_words` words
// (quantized_row_words). With `residual` (may alias x), writes x − decode there: the error that
// error feedback carries into the next step. Elements past `valid` are neither read nor written.
void quantize_row(std::uint32_t* row, const float* x, std::int64_t valid, CodecFormat format,
                  float* residual);
// y[0:valid] = decode(row) (accumulate: +=).
void dequantize_row(float* y, const std::uint32_t* row, std::int64_t valid, CodecFormat format,
                    bool accumulate);

}  // namespace tandem::kernels::cpu
