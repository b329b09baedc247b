// FP8 rounding as an FP8 GEMM sees its operands (kernels/cpu/fp8.hpp): the values of E4M3 and
// E5M2 (OCP OFP8 rev. 1.0), ties to even, saturation, subnormals, and per-tensor scaling.
#include "kernels/cpu/fp8.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace tandem::kernels::cpu {
namespace {

TEST(Fp8Rounding, E4M3KeepsThreeMantissaBitsAndRoundsTiesToEven) {
  EXPECT_EQ(round_to_fp8(1.0f, Fp8Format::e4m3), 1.0f);
  EXPECT_EQ(round_to_fp8(1.1f, Fp8Format::e4m3), 1.125f);     // spacing 1/8 in [1, 2)
  EXPECT_EQ(round_to_fp8(1.0625f, Fp8Format::e4m3), 1.0f);    // tie: to the even mantissa
  EXPECT_EQ(round_to_fp8(1.1875f, Fp8Format::e4m3), 1.25f);   // tie: to the even mantissa
  EXPECT_EQ(round_to_fp8(-3.3f, Fp8Format::e4m3), -3.25f);    // spacing 1/4 in [2, 4)
  EXPECT_EQ(round_to_fp8(300.0f, Fp8Format::e4m3), 288.0f);   // spacing 32 in [256, 448]
}

TEST(Fp8Rounding, SaturatesAtTheFormatMaximum) {
  EXPECT_EQ(fp8_max(Fp8Format::e4m3), 448.0f);
  EXPECT_EQ(fp8_max(Fp8Format::e5m2), 57344.0f);
  EXPECT_EQ(round_to_fp8(1000.0f, Fp8Format::e4m3), 448.0f);
  EXPECT_EQ(round_to_fp8(-1e6f, Fp8Format::e5m2), -57344.0f);
}

TEST(Fp8Rounding, KeepsSubnormalsBelowTheSmallestNormal) {
  const float e4m3_smallest = std::ldexp(1.0f, -9);  // 2^-6 x 2^-3
  EXPECT_EQ(round_to_fp8(e4m3_smallest, Fp8Format::e4m3), e4m3_smallest);
  EXPECT_EQ(round_to_fp8(0.4f * e4m3_smallest, Fp8Format::e4m3), 0.0f);
  EXPECT_EQ(round_to_fp8(2.6f * e4m3_smallest, Fp8Format::e4m3), 3 * e4m3_smallest);
  const float e5m2_smallest = std::ldexp(1.0f, -16);  // 2^-14 x 2^-2
  EXPECT_EQ(round_to_fp8(e5m2_smallest, Fp8Format::e5m2), e5m2_smallest);
}

TEST(Fp8Rounding, E5M2KeepsTwoMantissaBits) {
  EXPECT_EQ(round_to_fp8(1.1f, Fp8Format::e5m2), 1.0f);  // spacing 1/4 in [1, 2)
  EXPECT_EQ(round_to_fp8(1.2f, Fp8Format::e5m2), 1.25f);
  EXPECT_EQ(round_to_fp8(5.5f, Fp8Format::e5m2), 6.0f);  // spacing 1 in [4, 8): tie to even
}

TEST(Fp8Quantize, TheLargestMagnitudeSurvivesAndOthersStayWithinHalfASpacing) {
  std::vector<float> v;
  for (int i = 0; i < 1000; ++i) v.push_back(std::sin(0.37f * i) * 0.02f);
  const std::vector<float> before = v;
  quantize_fp8(v.data(), static_cast<std::int64_t>(v.size()), Fp8Format::e4m3);
  float amax = 0;
  for (float x : before) amax = std::max(amax, std::fabs(x));
  int changed = 0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    // Normal range: relative error at most 2^-4 (half of E4M3's 2^-3 spacing).
    if (std::fabs(before[i]) > amax / 448.0f * std::ldexp(1.0f, -6))
      EXPECT_LE(std::fabs(v[i] - before[i]), std::ldexp(1.0f, -4) * std::fabs(before[i]) * 1.0001f) << i;
    if (std::fabs(before[i]) == amax) EXPECT_FLOAT_EQ(std::fabs(v[i]), amax);
    changed += v[i] != before[i];
  }
  EXPECT_GT(changed, 500) << "most values are not on the FP8 grid before rounding";
  std::vector<float> zeros(8, 0.0f);
  quantize_fp8(zeros.data(), 8, Fp8Format::e5m2);
  EXPECT_EQ(zeros, std::vector<float>(8, 0.0f));
}

}  // namespace
}  // namespace tandem::kernels::cpu
