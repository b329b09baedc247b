// The device cost model: how long one compute op takes on one device.
//
// A roofline with per-kind efficiencies: an op is bound either by arithmetic (its FLOPs over the
// device's peak for its dtype, scaled by how close that kind of kernel gets to peak) or by memory
// (its bytes over the memory bandwidth, scaled likewise), plus a fixed launch overhead. Tensor-core
// peaks apply only to GEMM and attention; element-wise, norm and optimizer kernels run on the
// vector units, at the fp32 peak.
//
// A GPU profile with `gpu_kernels:` constants is costed kernel by kernel instead
// (sim/gpu_kernel_model.hpp: GEMM tiles and waves, streaming kernels at an achievable HBM
// fraction, flash attention's measured efficiency, Megatron-LM's fused kernels and passes).
//
// A kind with a calibrated efficiency curve (platforms/efficiency_curve.hpp, fitted by `tandem
// calibrate` from the kind's kernels measured on the device) is costed by that curve on its bound
// side alone: the measurement already contains whatever limited the kernel. That matters on CPUs,
// where most kernels of a training step run out of cache, so a roofline against DRAM bandwidth
// would call them memory-bound when they are not.
#pragma once

#include "common/units.hpp"
#include "platforms/device.hpp"
#include "strategies/op.hpp"

namespace tandem::sim {

struct ComputeCost {
  Seconds seconds = 0;
  Seconds flop_seconds = 0;    // arithmetic-bound time (without launch overhead)
  Seconds memory_seconds = 0;  // memory-bound time (without launch overhead)
  bool compute_bound() const { return flop_seconds >= memory_seconds; }
};

ComputeCost compute_cost(const ComputeOp& op, const DeviceProfile& device);

}  // namespace tandem::sim
