// Number formatting shared by the analysis texts and the HTML report.
#pragma once

#include <optional>
#include <string>

#include "common/units.hpp"

namespace tandem {

std::string printf_string(const char* format, double value);
std::string human_seconds(Seconds s);      // "4.379 ms", "-12.000 us"
std::string human_bytes(Bytes b);          // "2.63 MiB"
std::string signed_percent(std::optional<double> fraction);  // "+12.3 %", "n/a"

}  // namespace tandem
