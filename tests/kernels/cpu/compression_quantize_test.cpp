// The quantizing codec kernels: int8 rows decode within half a quantization step of the input
// and never exceed the chunk's largest magnitude; sign rows decode to ±mean|x|; the residual is
// exactly what decoding lost; fp16 / bf16 rounding lands on the format's neighbours.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/cpu/compression_quantize.hpp"
#include "tests/kernels/cpu/kernel_test_support.hpp"

namespace tandem::kernels::cpu {
namespace {

std::vector<std::uint32_t> row_for(CodecFormat format, std::int64_t n) {
  return std::vector<std::uint32_t>(static_cast<std::size_t>(quantized_row_words(format, n)), 0xFFFFFFFFu);
}

float max_abs(const std::vector<float>& x) {
  float m = 0;
  for (float v : x) m = std::max(m, std::abs(v));
  return m;
}

TEST(CompressionQuantize, Int8DecodesWithinHalfAStepAndWithinTheChunksRange) {
  const std::int64_t n = 1001;  // not a multiple of 4: the last word is partly used
  const auto x = testing::random_vector(n, 7, -3.0f, 2.0f);
  auto row = row_for(CodecFormat::int8, n);
  quantize_row(row.data(), x.data(), n, CodecFormat::int8, nullptr);
  std::vector<float> y(n);
  dequantize_row(y.data(), row.data(), n, CodecFormat::int8, false);
  const float step = max_abs(x) / 127.0f;
  for (std::int64_t i = 0; i < n; ++i) {
    EXPECT_LE(std::abs(y[i] - x[i]), 0.5f * step * (1 + 1e-5f)) << i;
    EXPECT_LE(std::abs(y[i]), max_abs(x) * (1 + 1e-6f)) << i;  // codes stay in [-127, 127]
  }
}

TEST(CompressionQuantize, SignDecodesToTheMeanMagnitudeWithEachSign) {
  const std::vector<float> x{1.0f, -2.0f, 3.0f, -6.0f, 0.5f, -0.5f};
  auto row = row_for(CodecFormat::sign, 6);
  quantize_row(row.data(), x.data(), 6, CodecFormat::sign, nullptr);
  std::vector<float> y(6);
  dequantize_row(y.data(), row.data(), 6, CodecFormat::sign, false);
  const float mean = 13.0f / 6.0f;
  for (int i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(y[i], std::signbit(x[i]) ? -mean : mean) << i;
}

TEST(CompressionQuantize, ResidualIsExactlyWhatDecodingLost) {
  for (CodecFormat format : {CodecFormat::int8, CodecFormat::sign}) {
    const std::int64_t n = 77;
    auto x = testing::random_vector(n, 3);
    const auto original = x;
    auto row = row_for(format, n);
    quantize_row(row.data(), x.data(), n, format, x.data());  // in place, as error feedback runs it
    std::vector<float> y(n);
    dequantize_row(y.data(), row.data(), n, format, false);
    for (std::int64_t i = 0; i < n; ++i) EXPECT_EQ(x[i], original[i] - y[i]) << to_string(format) << " " << i;
  }
}

TEST(CompressionQuantize, DecodeAccumulatesAndLeavesElementsPastTheValidOnesAlone) {
  const std::vector<float> x{4.0f, -4.0f};
  auto row = row_for(CodecFormat::int8, 8);
  quantize_row(row.data(), x.data(), 2, CodecFormat::int8, nullptr);
  std::vector<float> y{1.0f, 1.0f, 9.0f};
  dequantize_row(y.data(), row.data(), 2, CodecFormat::int8, true);
  EXPECT_FLOAT_EQ(y[0], 5.0f);
  EXPECT_FLOAT_EQ(y[1], -3.0f);
  EXPECT_EQ(y[2], 9.0f);
}

TEST(CompressionQuantize, HalfFormatsRoundToNearestEven) {
  // fp16 has 10 fraction bits: 1 + 2^-11 is a tie between 1 and 1 + 2^-10 (even: 1).
  EXPECT_EQ(round_to_format(1.0f + std::ldexp(1.0f, -11), CodecFormat::fp16), 1.0f);
  EXPECT_EQ(round_to_format(1.0f + 3 * std::ldexp(1.0f, -11), CodecFormat::fp16), 1.0f + std::ldexp(1.0f, -9));
  EXPECT_TRUE(std::isinf(round_to_format(65520.0f, CodecFormat::fp16)));  // past fp16's max 65504
  // bf16 has 7 fraction bits.
  EXPECT_EQ(round_to_format(1.0f + std::ldexp(1.0f, -8), CodecFormat::bf16), 1.0f);
  EXPECT_EQ(round_to_format(1.0f + 3 * std::ldexp(1.0f, -8), CodecFormat::bf16), 1.0f + std::ldexp(1.0f, -6));
  EXPECT_FLOAT_EQ(round_to_format(3e38f, CodecFormat::bf16), 3.0040553e38f);  // bf16 keeps fp32's range
  EXPECT_EQ(round_to_format(0.1f, CodecFormat::fp32), 0.1f);
}

}  // namespace
}  // namespace tandem::kernels::cpu
