// Ranks that are threads on one machine slow each other's kernels down even when each has a core
// of its own: they share the caches, the memory bandwidth and, on SMT machines, the core's
// pipelines. Calibration times kernels with every core busy (one replica per core, as training
// runs) and the same kernels alone (DeviceProfile::alone_kernel_time_fraction). In between, the
// slowdown grows with the cores kept busy, by ranks or by other programs (background_load):
//
//     factor(k) = fraction + (1 - fraction) (k - 1) / (c - 1),   k = min(c, ranks + load)
//
// 1 with every core busy (the curves as fitted), `fraction` for one rank on an idle machine.
// Linear in k because each busy neighbour takes a like share of what they share; measured
// end points only (a 2-core machine has no point in between).
#pragma once

#include <algorithm>

#include "platforms/device.hpp"

namespace tandem::sim {

inline double kernel_time_factor(const DeviceProfile& device, int cores, int ranks, double background_load) {
  const double fraction = device.alone_kernel_time_fraction;
  if (cores <= 1 || fraction == 1) return 1.0;
  const double busy = std::clamp(ranks + background_load, 1.0, static_cast<double>(cores));
  return fraction + (1 - fraction) * (busy - 1) / (cores - 1);
}

}  // namespace tandem::sim
