// Units live in type names, so a signature says what it takes: never a bare `double bw`.
#pragma once

#include <cstdint>

namespace tandem {

using Seconds = double;
using Bytes = double;           // double: model sizes reach 1e12 and are summed, never indexed
using Flops = double;           // floating-point operations (a count, not a rate)
using FlopsPerSecond = double;
using BytesPerSecond = double;
using Watts = double;
using Joules = double;

inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
inline constexpr double kGB = 1e9;
inline constexpr double kTera = 1e12;

}  // namespace tandem
