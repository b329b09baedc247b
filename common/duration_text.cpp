#include "common/duration_text.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <utility>

namespace tandem {

namespace {
constexpr std::pair<const char*, double> kUnits[] = {{"d", 86400}, {"h", 3600}, {"min", 60}, {"s", 1}};
}

Seconds parse_duration_s(const std::string& text) {
  const char* begin = text.c_str();
  char* end = nullptr;
  const double number = std::strtod(begin, &end);
  const std::string unit(end);
  double scale = 0;
  if (end == begin) scale = 0;
  else if (unit.empty()) scale = 1;
  else
    for (const auto& [name, seconds] : kUnits)
      if (unit == name) scale = seconds;
  const double value = number * scale;
  if (scale == 0 || !std::isfinite(value) || !(value > 0))
    throw std::invalid_argument("'" + text + "' is not a positive duration (write e.g. 7d, 12h, 30min, 90s)");
  return value;
}

Seconds parse_duration_s(const std::string& text, Seconds min_s, Seconds max_s) {
  const Seconds value = parse_duration_s(text);
  if (!(value >= min_s && value <= max_s))
    throw std::invalid_argument("'" + text + "' must be between " + format_duration(min_s) + " and " +
                                format_duration(max_s));
  return value;
}

std::string format_duration(Seconds seconds) {
  char text[64];
  for (const auto& [name, unit_s] : kUnits) {
    if (seconds >= unit_s || unit_s == 1) {
      const double v = seconds / unit_s;
      std::snprintf(text, sizeof text, v >= 100 ? "%.0f %s" : v >= 10 ? "%.1f %s" : "%.2f %s", v, name);
      return text;
    }
  }
  return "?";
}

}  // namespace tandem
