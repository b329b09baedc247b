#include "kernels/cuda/compression_dispatch.hpp"

#include <string>

#include "kernels/cuda/compression.cuh"

namespace tandem::kernels::cuda {
namespace {

using I64 = std::int64_t;

// Copies x[0:n] (device) into the concatenation of the outputs, rounded to `format`.
void scatter_to_outputs(const OpTensors& c, const float* x, I64 n, CodecFormat format, cudaStream_t stream) {
  for_each_concatenated(c, true, n, [&](std::size_t i, I64 at, I64 len) {
    codec_round(c.out(i, len), x + at, len, format, false, stream);
  });
}

void pack(const OpTensors& c, const CodecArgs& a, cudaStream_t stream) {
  float* x = c.out(0, a.numel);
  for_each_concatenated(c, false, a.numel, [&](std::size_t i, I64 at, I64 len) {
    codec_round(x + at, c.in(i, len), len, a.format, a.accumulate, stream);
  });
}

void quantize(const OpTensors& c, const CodecArgs& a, const StreamContext& ctx) {
  const I64 row_words = quantized_row_words(a.format, a.chunk);
  const float* x = c.in(0, a.numel);
  std::uint32_t* table = table_words(c, true, 0, (a.first_row + a.rows) * row_words);
  float* residual = c.outputs() > 1 ? c.out(1, a.numel) : nullptr;
  quantize_rows(table, residual, x, a.numel, a.chunk, a.rows, a.first_row, a.format, ctx.workspace, ctx.stream);
}

void dequantize_sum(const OpTensors& c, const CodecArgs& a, cudaStream_t stream) {
  if (a.numel > a.chunk) c.fail("dequantize_sum covers at most one chunk");
  const I64 row_words = quantized_row_words(a.format, a.chunk);
  const std::uint32_t* table = table_words(c, false, 0, a.rows * row_words);
  dequantize_sum_rows(c.out(0, a.numel), table, a.numel, a.chunk, a.rows, a.format, a.accumulate, stream);
}

void dequantize_concat(const OpTensors& c, const CodecArgs& a, const StreamContext& ctx) {
  const I64 row_words = quantized_row_words(a.format, a.chunk);
  if (a.chunk < 1 && a.numel > 0) c.fail("dequantize_concat: chunk must be positive");
  const I64 rows = a.numel > 0 ? (a.numel + a.chunk - 1) / a.chunk : 0;
  const std::uint32_t* table = table_words(c, false, 0, rows * row_words);
  auto* x = static_cast<float*>(ctx.workspace(sizeof(float) * static_cast<std::size_t>(a.numel)));
  dequantize_rows(x, table, a.numel, a.chunk, a.format, ctx.stream);
  scatter_to_outputs(c, x, a.numel, CodecFormat::fp32, ctx.stream);
}

void top_k(const OpTensors& c, const CodecArgs& a, const StreamContext& ctx) {
  const float* x = c.in(0, a.numel);
  std::uint32_t* row = table_words(c, true, 0, (a.first_row + 1) * 2 * a.k) + a.first_row * 2 * a.k;
  float* residual = c.outputs() > 1 ? c.out(1, a.numel) : nullptr;
  top_k_select(reinterpret_cast<std::int32_t*>(row), reinterpret_cast<float*>(row + a.k), residual, x, a.numel, a.k,
               ctx.workspace, ctx.stream);
}

void scatter_sum(const OpTensors& c, const CodecArgs& a, const StreamContext& ctx) {
  const std::uint32_t* table = table_words(c, false, 0, a.rows * 2 * a.k);
  const ScatterSums sums = scatter_sum_rows(a.numel, table, a.rows, a.k, ctx.workspace, ctx.stream);
  if (sums.bad_row >= 0)
    c.fail("row " + std::to_string(sums.bad_row) + ": scatter_add: index " + std::to_string(sums.bad_index) +
           " outside [0, " + std::to_string(a.numel) + ")");
  scatter_to_outputs(c, sums.y, a.numel, CodecFormat::fp32, ctx.stream);
}

}  // namespace

void run_codec(const OpTensors& c, const CodecArgs& a, const StreamContext& ctx) {
  if (a.numel < 0 || a.rows < 0 || a.first_row < 0 || a.k < 0) c.fail("negative codec size");
  switch (a.step) {
    case CodecStep::pack: return pack(c, a, ctx.stream);
    case CodecStep::unpack: return scatter_to_outputs(c, c.in(0, a.numel), a.numel, a.format, ctx.stream);
    case CodecStep::quantize: return quantize(c, a, ctx);
    case CodecStep::dequantize_sum: return dequantize_sum(c, a, ctx.stream);
    case CodecStep::dequantize_concat: return dequantize_concat(c, a, ctx);
    case CodecStep::top_k: return top_k(c, a, ctx);
    case CodecStep::scatter_sum: return scatter_sum(c, a, ctx);
    case CodecStep::orthogonalize:
      if (a.cols < 1 || a.numel % a.cols) c.fail("orthogonalize: numel is not a whole number of rows");
      return orthogonalize_columns(c.out(0, a.numel), a.numel / a.cols, a.cols, ctx.stream);
    case CodecStep::gaussian: return gaussian_fill(c.out(0, a.numel), a.numel, a.seed, ctx.stream);
    case CodecStep::subtract_scaled: {
      const float* d = c.in(0, a.numel);
      return subtract_scaled(c.out(0, a.numel), d, a.numel, a.scale, ctx.stream);
    }
  }
  c.fail("unknown codec step");
}

}  // namespace tandem::kernels::cuda
