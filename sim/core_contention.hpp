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
//
// The cores are not equally fast either (a hypervisor's vCPUs, interrupts on one of them): the
// curves hold the replicas' mean, and ranks that each hold a core and wait for each other go at
// the slowest core's pace, DeviceProfile::slowest_core_kernel_time_factor over the mean (1.1-1.3
// on the 2-vCPU EPYC guest, where a tensor-parallel pair's ranks measured 4.6 and 5.8 ms of kernels
// in the same steps).
#pragma once

#include <algorithm>

#include "platforms/device.hpp"

namespace tandem::sim {

inline double kernel_time_factor(const DeviceProfile& device, int cores, int ranks, double background_load) {
  if (cores <= 1) return 1.0;
  const double fraction = device.alone_kernel_time_fraction;
  const double busy = std::clamp(ranks + background_load, 1.0, static_cast<double>(cores));
  const double contention = fraction + (1 - fraction) * (busy - 1) / (cores - 1);
  // Ranks that each hold a core of their own wait for each other at their collectives and go at
  // the slowest core's pace; ranks that outnumber the cores take turns on all of them (their
  // pace is the cores' mean, as calibrated).
  const double slowest = ranks >= 2 && ranks <= cores ? device.slowest_core_kernel_time_factor : 1.0;
  return contention * slowest;
}

}  // namespace tandem::sim
