#include "sim/cost_model.hpp"

#include <gtest/gtest.h>

#include "platforms/kernel_class.hpp"
#include "strategies/ops.hpp"

namespace tandem::sim {
namespace {

ComputeOp gelu(std::int64_t numel, bool backward) {
  ComputeOp op;
  op.kind = OpKind::elementwise;
  op.args = ElementwiseArgs{ElementwiseFn::gelu, numel, backward};
  const auto cost = ops::elementwise_cost(std::get<ElementwiseArgs>(op.args), DType::fp32);
  op.flops = cost.flops;
  op.bytes = cost.bytes;
  op.compute_dtype = DType::fp32;
  return op;
}

TEST(CostModel, ACalibratedCurveOfTheOpsClassReplacesTheRoofline) {
  DeviceProfile p = find_device_profile("cpu-generic");
  const ComputeOp op = gelu(1 << 16, false);
  ASSERT_EQ(kernel_class(op), "elementwise.gelu");
  const Seconds roofline = compute_cost(op, p).seconds;
  p.efficiency_curves["elementwise.gelu"] = {BoundSide::memory, 0.1, 4096};
  const ComputeCost c = compute_cost(op, p);
  EXPECT_DOUBLE_EQ(c.seconds, p.launch_overhead_s + (op.bytes + 4096) / (p.memory_bandwidth_bytes_per_s * 0.1));
  EXPECT_NE(c.seconds, roofline);
  EXPECT_FALSE(c.compute_bound());
}

TEST(CostModel, TheKindsCurveServesClassesWithoutOne) {
  DeviceProfile p = find_device_profile("cpu-generic");
  p.efficiency_curves["elementwise"] = {BoundSide::flops, 0.5, 0};
  p.efficiency_curves["elementwise.gelu"] = {BoundSide::memory, 0.1, 0};
  const ComputeOp backward = gelu(1 << 16, true);  // class elementwise.gelu.bwd: no curve of its own
  EXPECT_DOUBLE_EQ(compute_cost(backward, p).seconds,
                   p.launch_overhead_s + backward.flops / (p.peak_fp32_flops_per_s * 0.5));
}

TEST(CostModel, ProfilesWithoutCurvesKeepTheRoofline) {
  const DeviceProfile p = find_device_profile("cpu-generic");
  const ComputeOp op = gelu(1 << 16, false);
  const auto k = static_cast<int>(OpKind::elementwise);
  const double memory_s = op.bytes / (p.memory_bandwidth_bytes_per_s * p.memory_efficiency[k]);
  const double flop_s = op.flops / (p.peak_fp32_flops_per_s * p.flop_efficiency[k]);
  EXPECT_DOUBLE_EQ(compute_cost(op, p).seconds, p.launch_overhead_s + std::max(memory_s, flop_s));
}

}  // namespace
}  // namespace tandem::sim
