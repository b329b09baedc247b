// Durations as people write them: "7d", "12h", "30min", "90s", "1.5h", or a bare number of
// seconds. Used by `goodput --horizon` and the reliability section of scenarios.
#pragma once

#include <string>

#include "common/units.hpp"

namespace tandem {

// std::invalid_argument naming the text when it is not a positive finite duration.
Seconds parse_duration_s(const std::string& text);
// The same, also refused (std::invalid_argument) outside [min_s, max_s]: "must be between 1.00 s
// and 365 d".
Seconds parse_duration_s(const std::string& text, Seconds min_s, Seconds max_s);
// The largest unit that keeps the number readable: "7.00 d", "3.50 h", "12.0 min", "42.0 s".
std::string format_duration(Seconds seconds);

}  // namespace tandem
