#include "kernels/cpu/compression_quantize.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

namespace tandem::kernels::cpu {
namespace {

using I64 = std::int64_t;

float bits_to_float(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
std::uint32_t float_to_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// bf16 keeps fp32's upper 16 bits; round to nearest even on the dropped half (NaN kept NaN).
float round_to_bf16(float x) {
  if (std::isnan(x)) return x;
  std::uint32_t u = float_to_bits(x);
  u += 0x7FFFu + ((u >> 16) & 1u);
  return bits_to_float(u & 0xFFFF0000u);
}

float int8_scale(const float* x, I64 n) {
  float absmax = 0.0f;
  for (I64 i = 0; i < n; ++i) absmax = std::max(absmax, std::abs(x[i]));
  return absmax / 127.0f;
}

float sign_scale(const float* x, I64 n) {
  double l1 = 0.0;  // in double: a chunk holds up to millions of elements
  for (I64 i = 0; i < n; ++i) l1 += std::abs(x[i]);
  return n > 0 ? static_cast<float>(l1 / static_cast<double>(n)) : 0.0f;
}

}  // namespace

float round_to_format(float x, CodecFormat format) {
  switch (format) {
    case CodecFormat::fp16: return static_cast<float>(static_cast<_Float16>(x));  // IEEE RNE
    case CodecFormat::bf16: return round_to_bf16(x);
    default: return x;
  }
}

void round_to_format(float* x, I64 n, CodecFormat format) {
  if (format == CodecFormat::fp32) return;
  for (I64 i = 0; i < n; ++i) x[i] = round_to_format(x[i], format);
}

void quantize_row(std::uint32_t* row, const float* x, I64 valid, CodecFormat format, float* residual) {
  std::uint32_t* codes = row + 1;
  if (format == CodecFormat::int8) {
    const float scale = int8_scale(x, valid);
    const float inv = scale > 0.0f ? 1.0f / scale : 0.0f;
    std::fill(codes, codes + (valid + 3) / 4, 0u);
    for (I64 i = 0; i < valid; ++i) {
      const float q = std::clamp(std::nearbyint(x[i] * inv), -127.0f, 127.0f);
      const auto code = static_cast<std::uint8_t>(static_cast<std::int8_t>(q));
      codes[i / 4] |= static_cast<std::uint32_t>(code) << (8 * (i % 4));
      if (residual) residual[i] = x[i] - q * scale;
    }
    row[0] = float_to_bits(scale);
    return;
  }
  if (format == CodecFormat::sign) {
    const float scale = sign_scale(x, valid);
    std::fill(codes, codes + (valid + 31) / 32, 0u);
    for (I64 i = 0; i < valid; ++i) {
      const bool negative = std::signbit(x[i]);
      if (negative) codes[i / 32] |= 1u << (i % 32);
      if (residual) residual[i] = x[i] - (negative ? -scale : scale);
    }
    row[0] = float_to_bits(scale);
    return;
  }
  throw std::invalid_argument(std::string("quantize_row: not a quantized format: ") + to_string(format));
}

void dequantize_row(float* y, const std::uint32_t* row, I64 valid, CodecFormat format, bool accumulate) {
  const float scale = bits_to_float(row[0]);
  const std::uint32_t* codes = row + 1;
  for (I64 i = 0; i < valid; ++i) {
    float v;
    if (format == CodecFormat::int8) {
      const auto code = static_cast<std::int8_t>(static_cast<std::uint8_t>(codes[i / 4] >> (8 * (i % 4))));
      v = static_cast<float>(code) * scale;
    } else if (format == CodecFormat::sign) {
      v = (codes[i / 32] >> (i % 32)) & 1u ? -scale : scale;
    } else {
      throw std::invalid_argument(std::string("dequantize_row: not a quantized format: ") + to_string(format));
    }
    y[i] = accumulate ? y[i] + v : v;
  }
}

}  // namespace tandem::kernels::cpu
