#include "kernels/cpu/fp8.hpp"

#include <algorithm>
#include <cmath>

namespace tandem::kernels::cpu {

namespace {

struct Format {
  int mantissa_bits;
  int min_normal_exponent;  // of 2: the smallest normal value is 2^min_normal_exponent
  float max;
};

// OCP 8-bit Floating Point Specification (OFP8) rev. 1.0, table 1: E4M3 (bias 7, max 448, min
// normal 2^-6), E5M2 (bias 15, max 57344, min normal 2^-14).
Format format_of(Fp8Format f) {
  return f == Fp8Format::e5m2 ? Format{2, -14, 57344.0f} : Format{3, -6, 448.0f};
}

}  // namespace

float fp8_max(Fp8Format format) { return format_of(format).max; }

float round_to_fp8(float x, Fp8Format format) {
  if (format == Fp8Format::none || x == 0.0f || !std::isfinite(x)) return x;
  const Format f = format_of(format);
  int exponent = 0;
  std::frexp(x, &exponent);  // |x| in [2^(exponent-1), 2^exponent)
  // The spacing of representable values around x: mantissa_bits below its leading bit, or the
  // subnormal spacing below the smallest normal value.
  const int lead = std::max(exponent - 1, f.min_normal_exponent);
  const float quantum = std::ldexp(1.0f, lead - f.mantissa_bits);
  const float rounded = std::nearbyint(x / quantum) * quantum;  // ties to even (default mode)
  return std::clamp(rounded, -f.max, f.max);
}

void quantize_fp8(float* data, std::int64_t n, Fp8Format format) {
  if (format == Fp8Format::none || n <= 0) return;
  float amax = 0.0f;
  for (std::int64_t i = 0; i < n; ++i) amax = std::max(amax, std::fabs(data[i]));
  if (!(amax > 0.0f) || !std::isfinite(amax)) return;
  const float scale = fp8_max(format) / amax;
  for (std::int64_t i = 0; i < n; ++i) data[i] = round_to_fp8(data[i] * scale, format) / scale;
}

}  // namespace tandem::kernels::cpu
