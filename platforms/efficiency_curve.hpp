// How close one kind of kernel gets to a device's peak, as a function of the op's size.
//
// Small kernels do not reach the efficiency of large ones: a fixed cost (loop set-up, packing,
// cache warm-up, a partial last wave of thread blocks) is amortised over the work. The saturating
// curve
//
//     eff(x) = max_efficiency · x / (x + half_work)
//
// where x is the op's work on its bound side (FLOPs for a compute-bound kind, bytes for a
// memory-bound one), says exactly that: an op of size x takes
//
//     x / (peak · eff(x)) = (x + half_work) / (peak · max_efficiency)
//
// i.e. an affine time in x, a fixed part (half_work of work at full speed) plus the work at
// max_efficiency. Measured GEMMs (OpenBLAS on CPUs, cuBLAS on GPUs) and bandwidth-bound kernels
// follow that form well over the sizes training issues, and the form makes fitting a linear
// least-squares problem (analysis/calibration/fit.hpp), so calibration is exact on exact data.
#pragma once

#include "common/units.hpp"

namespace tandem {

enum class BoundSide { flops, memory };
const char* to_string(BoundSide side);

struct EfficiencyCurve {
  BoundSide bound = BoundSide::flops;  // which of an op's figures is its work x
  double max_efficiency = 1;           // reached by very large ops; fraction of the peak
  double half_work = 0;                // work (FLOPs or bytes) at which eff = max_efficiency / 2

  double efficiency(double work) const {
    return work <= 0 ? 0.0 : max_efficiency * work / (work + half_work);
  }
  // Time of an op of `work` at `peak_per_s` (FLOP/s or bytes/s of the bound side).
  Seconds seconds(double work, double peak_per_s) const {
    if (work <= 0 || peak_per_s <= 0) return 0.0;
    return (work + half_work) / (peak_per_s * max_efficiency);
  }
};

}  // namespace tandem
