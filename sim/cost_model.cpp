#include "sim/cost_model.hpp"

#include <algorithm>

#include "sim/gpu_kernel_model.hpp"

namespace tandem::sim {

namespace {
bool uses_tensor_cores(OpKind kind) { return kind == OpKind::gemm || kind == OpKind::attention; }
}  // namespace

ComputeCost compute_cost(const ComputeOp& op, const DeviceProfile& device) {
  const auto k = static_cast<std::size_t>(op.kind);
  const DType dtype = uses_tensor_cores(op.kind) ? op.compute_dtype : DType::fp32;
  const FlopsPerSecond flops_per_s = device.peak_flops_per_s(dtype) * device.flop_efficiency[k];
  const BytesPerSecond bytes_per_s =
      device.memory_bandwidth_bytes_per_s * device.memory_efficiency[k];

  ComputeCost cost;
  if (const EfficiencyCurve* curve = device.curve_for(op)) {
    // A calibrated kind: its measured curve on the bound side is the whole op.
    if (curve->bound == BoundSide::flops) {
      cost.flop_seconds = curve->seconds(op.flops, device.peak_flops_per_s(dtype));
    } else {
      cost.memory_seconds = curve->seconds(op.bytes, device.memory_bandwidth_bytes_per_s);
    }
    cost.seconds = device.launch_overhead_s + cost.flop_seconds + cost.memory_seconds;
    return cost;
  }
  if (device.is_gpu() && device.gpu_kernels.present()) {
    // A GPU with kernel-level constants: costed kernel by kernel (sim/gpu_kernel_model.hpp).
    const gpu::KernelTime t = gpu::kernel_time(op, device);
    cost.seconds = t.seconds;
    cost.flop_seconds = t.flop_seconds;
    cost.memory_seconds = t.memory_seconds;
    return cost;
  }
  cost.flop_seconds = (op.flops > 0 && flops_per_s > 0) ? op.flops / flops_per_s : 0.0;
  cost.memory_seconds = (op.bytes > 0 && bytes_per_s > 0) ? op.bytes / bytes_per_s : 0.0;
  cost.seconds = device.launch_overhead_s + std::max(cost.flop_seconds, cost.memory_seconds);
  return cost;
}

}  // namespace tandem::sim
