#include "kernels/cpu/compression_dispatch.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/cpu/compression_lowrank.hpp"
#include "kernels/cpu/compression_quantize.hpp"
#include "kernels/cpu/compression_topk.hpp"

namespace tandem::kernels::cpu {
namespace {

using I64 = std::int64_t;

// Elements of chunk `row` that hold data when `numel` elements are cut into chunks of `chunk`.
I64 valid_in_row(I64 numel, I64 chunk, I64 row) { return std::clamp<I64>(numel - row * chunk, 0, chunk); }

// Copies x[0:n] into the concatenation of the outputs, rounded to `format`.
void scatter_to_outputs(const OpTensors& c, const float* x, I64 n, CodecFormat format) {
  for_each_concatenated(c, true, n, [&](std::size_t i, I64 at, I64 len) {
    float* g = c.out(i, len);
    for (I64 j = 0; j < len; ++j) g[j] = round_to_format(x[at + j], format);
  });
}

void pack(const OpTensors& c, const CodecArgs& a) {
  float* x = c.out(0, a.numel);
  for_each_concatenated(c, false, a.numel, [&](std::size_t i, I64 at, I64 len) {
    const float* g = c.in(i, len);
    for (I64 j = 0; j < len; ++j) x[at + j] = round_to_format(a.accumulate ? x[at + j] + g[j] : g[j], a.format);
  });
}

void quantize(const OpTensors& c, const CodecArgs& a) {
  const I64 row_words = quantized_row_words(a.format, a.chunk);
  const float* x = c.in(0, a.numel);
  std::uint32_t* table = table_words(c, true, 0, (a.first_row + a.rows) * row_words);
  float* residual = c.outputs() > 1 ? c.out(1, a.numel) : nullptr;
  for (I64 r = 0; r < a.rows; ++r)
    quantize_row(table + (a.first_row + r) * row_words, x + r * a.chunk, valid_in_row(a.numel, a.chunk, r),
                 a.format, residual ? residual + r * a.chunk : nullptr);
}

void dequantize_sum(const OpTensors& c, const CodecArgs& a) {
  if (a.numel > a.chunk) c.fail("dequantize_sum covers at most one chunk");
  const I64 row_words = quantized_row_words(a.format, a.chunk);
  const std::uint32_t* table = table_words(c, false, 0, a.rows * row_words);
  float* y = c.out(0, a.numel);
  for (I64 r = 0; r < a.rows; ++r) dequantize_row(y, table + r * row_words, a.numel, a.format, a.accumulate || r > 0);
}

void dequantize_concat(const OpTensors& c, const CodecArgs& a) {
  const I64 row_words = quantized_row_words(a.format, a.chunk);
  const I64 rows = (a.numel + a.chunk - 1) / a.chunk;
  const std::uint32_t* table = table_words(c, false, 0, rows * row_words);
  std::vector<float> x(static_cast<std::size_t>(a.numel));
  for (I64 r = 0; r < rows; ++r)
    dequantize_row(x.data() + r * a.chunk, table + r * row_words, valid_in_row(a.numel, a.chunk, r), a.format, false);
  scatter_to_outputs(c, x.data(), a.numel, CodecFormat::fp32);
}

void top_k(const OpTensors& c, const CodecArgs& a) {
  const float* x = c.in(0, a.numel);
  std::uint32_t* row = table_words(c, true, 0, (a.first_row + 1) * 2 * a.k) + a.first_row * 2 * a.k;
  float* residual = c.outputs() > 1 ? c.out(1, a.numel) : nullptr;
  top_k_select(reinterpret_cast<std::int32_t*>(row), reinterpret_cast<float*>(row + a.k), x, a.numel, a.k, residual);
}

void scatter_sum(const OpTensors& c, const CodecArgs& a) {
  const std::uint32_t* table = table_words(c, false, 0, a.rows * 2 * a.k);
  std::vector<float> y(static_cast<std::size_t>(a.numel), 0.0f);
  for (I64 r = 0; r < a.rows; ++r) {
    const std::uint32_t* row = table + r * 2 * a.k;
    try {
      scatter_add(y.data(), a.numel, reinterpret_cast<const std::int32_t*>(row),
                  reinterpret_cast<const float*>(row + a.k), a.k);
    } catch (const std::out_of_range& e) {
      c.fail(std::string("row ") + std::to_string(r) + ": " + e.what());
    }
  }
  scatter_to_outputs(c, y.data(), a.numel, CodecFormat::fp32);
}

void subtract_scaled(const OpTensors& c, const CodecArgs& a) {
  const float* d = c.in(0, a.numel);
  float* x = c.out(0, a.numel);
  for (I64 i = 0; i < a.numel; ++i) x[i] -= a.scale * d[i];
}

}  // namespace

void run_codec(const OpTensors& c, const CodecArgs& a) {
  if (a.numel < 0 || a.rows < 0 || a.first_row < 0 || a.k < 0) c.fail("negative codec size");
  switch (a.step) {
    case CodecStep::pack: return pack(c, a);
    case CodecStep::unpack: return scatter_to_outputs(c, c.in(0, a.numel), a.numel, a.format);
    case CodecStep::quantize: return quantize(c, a);
    case CodecStep::dequantize_sum: return dequantize_sum(c, a);
    case CodecStep::dequantize_concat: return dequantize_concat(c, a);
    case CodecStep::top_k: return top_k(c, a);
    case CodecStep::scatter_sum: return scatter_sum(c, a);
    case CodecStep::orthogonalize:
      if (a.cols < 1 || a.numel % a.cols) c.fail("orthogonalize: numel is not a whole number of rows");
      return orthogonalize_columns(c.out(0, a.numel), a.numel / a.cols, a.cols);
    case CodecStep::gaussian: return gaussian_fill(c.out(0, a.numel), a.numel, a.seed);
    case CodecStep::subtract_scaled: return subtract_scaled(c, a);
  }
  c.fail("unknown codec step");
}

}  // namespace tandem::kernels::cpu
