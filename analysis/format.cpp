#include "analysis/format.hpp"

#include <cmath>
#include <cstdio>

namespace tandem {

std::string printf_string(const char* format, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, value);
  return buffer;
}

std::string human_seconds(Seconds s) {
  const double magnitude = std::fabs(s);
  if (magnitude == 0) return "0 s";
  if (magnitude >= 1) return printf_string("%.3f s", s);
  if (magnitude >= 1e-3) return printf_string("%.3f ms", s * 1e3);
  return printf_string("%.3f us", s * 1e6);
}

std::string human_bytes(Bytes b) {
  const double magnitude = std::fabs(b);
  if (magnitude >= kGiB) return printf_string("%.2f GiB", b / kGiB);
  if (magnitude >= 1024.0 * 1024.0) return printf_string("%.2f MiB", b / (1024.0 * 1024.0));
  if (magnitude >= 1024.0) return printf_string("%.2f KiB", b / 1024.0);
  return printf_string("%.0f B", b);
}

std::string signed_percent(std::optional<double> fraction) {
  if (!fraction || !std::isfinite(*fraction)) return "n/a";
  return printf_string("%+.1f %%", 100 * *fraction);
}

}  // namespace tandem
