// The ranges of the numbers given on the command line: the same bounds as the scenario knobs
// they override (common/input_limits.hpp), checked as 64-bit values (or finite doubles) before
// CLI11 narrows them, so `--iterations 4294967297` is refused rather than run as 1, and `--timeout
// nan` is refused rather than cast.
#pragma once

#include <CLI/CLI.hpp>

#include <charconv>
#include <cmath>
#include <string>

#include "common/input_limits.hpp"

namespace tandem::cli {

// Worker processes of a search: 0 (one per core) to 1024.
inline constexpr limits::CountRange kWorkers{0, 1024};
// How many rows a listing shows (compare --top).
inline constexpr limits::CountRange kListedRows{0, 1 << 20};
// Seconds a rank may wait for its peers: 1 ms to 11 days.
inline constexpr limits::Range kTimeoutS{1e-3, 1e6, "s"};

inline CLI::Validator in_range(const limits::CountRange& range) {
  const std::string span = "[" + std::to_string(range.min) + ", " + std::to_string(range.max) + "]";
  return CLI::Validator(
      [range, span](std::string& text) -> std::string {
        long long v = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
        if (ec != std::errc() || end != text.data() + text.size() || v < range.min || v > range.max)
          return "must be a whole number in " + span + ", got '" + text + "'";
        return "";
      },
      "INT in " + span);
}

inline CLI::Validator in_range(const limits::Range& range) {
  const std::string span = "[" + std::to_string(range.min) + ", " + std::to_string(range.max) + "] " + range.unit;
  return CLI::Validator(
      [range, span](std::string& text) -> std::string {
        double v = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
        if (ec != std::errc() || end != text.data() + text.size() || !(v >= range.min && v <= range.max))
          return "must be a number in " + span + ", got '" + text + "'";
        return "";
      },
      "NUMBER in " + span);
}

}  // namespace tandem::cli
