// The kernel arguments of gradient-compression codecs (strategies/compression/): one KernelArgs
// alternative (strategies/op.hpp) for every encode / decode step, so that the real backends run
// them as kernels (kernels/cpu/compression_*.hpp) and the simulator prices them from the op's
// FLOPs and bytes (codec_ops.hpp states the cost of each step) like any memory-bound kernel.
//
// Wire format of the quantizing and sparsifying codecs: a "block table" tensor of dtype int32,
// [rows, row_words]: one row per encoded chunk, so that an all-to-all or all-gather over the
// table moves whole rows (member i's part of an element-wise sharded [N, w] tensor is row i).
//   quantized row  [scale (fp32 bits), codes packed little-endian into 32-bit words]
//                  int8: 4 codes per word; 1-bit: 32 signs per word (bit set = negative)
//   top-k row      [k indices (int32), k values (fp32 bits)]
#pragma once

#include <cstdint>

namespace tandem {

enum class CodecStep : std::uint8_t {
  pack,               // inputs {g_0..g_t-1} outputs {x}: x[0:n] (+)= concat(g), rounded to `format`
  unpack,             // inputs {x} outputs {g_0..g_t-1}: concat(g) = x[0:n], rounded to `format`
  quantize,           // inputs {x} outputs {table[, x]}: x's chunks -> rows; with x out: x -= decoded
  dequantize_sum,     // inputs {table} outputs {y}: y[0:numel] (+)= sum of `rows` decoded rows (numel <= chunk)
  dequantize_concat,  // inputs {table} outputs {g_0..}: concat(g) = the `rows` decoded rows, in order
  top_k,              // inputs {x} outputs {table[, x]}: row `first_row` = top-k of |x|; with x out: x[sent] = 0
  scatter_sum,        // inputs {table} outputs {g_0..}: concat(g) = 0, then += every row's (index, value)
  orthogonalize,      // inputs {p} outputs {p}: Gram-Schmidt on the `cols` columns of p [rows, cols]
  gaussian,           // outputs {q}: q = N(0, 1) drawn from `seed` (the same on every rank)
  subtract_scaled,    // inputs {d} outputs {x}: x[0:n] -= scale · d[0:n]
};
inline constexpr int kCodecStepCount = 10;

// Number formats a codec rounds to.
enum class CodecFormat : std::uint8_t { fp32, fp16, bf16, int8, sign };

struct CodecArgs {
  CodecStep step = CodecStep::pack;
  CodecFormat format = CodecFormat::fp32;
  std::int64_t numel = 0;      // elements the step covers (pack/unpack: sum over the tensors)
  std::int64_t chunk = 0;      // elements per encoded row (quantize / dequantize)
  std::int64_t rows = 1;       // rows of the block table the step writes or reads
  std::int64_t first_row = 0;  // first row written (quantize, top_k)
  std::int64_t k = 0;          // top_k: entries per row
  std::int64_t cols = 0;       // orthogonalize: columns; numel / cols rows
  bool accumulate = false;     // pack, dequantize_sum: add into the output (error feedback: it holds the residual)
  float scale = 1.0f;          // subtract_scaled
  std::uint64_t seed = 0;      // gaussian
};

const char* to_string(CodecStep step);
const char* to_string(CodecFormat format);

// 32-bit words of one quantized row holding `chunk` codes of `format` (the scale word included).
std::int64_t quantized_row_words(CodecFormat format, std::int64_t chunk);

}  // namespace tandem
