#include "analysis/calibration/profile_yaml.hpp"

#include <gtest/gtest.h>

#include "tests/platforms/platform_test_support.hpp"
#include "analysis/trace.hpp"

namespace tandem::calibration {
namespace {

DeviceProfile calibrated_profile() {
  DeviceProfile p = find_device_profile("cpu-generic");
  p.name = "localhost-calibrated";
  p.launch_overhead_s = 0.6e-6;
  p.efficiency_curves["gemm"] = {BoundSide::flops, 1.1623456789, 81234.5};
  p.efficiency_curves["elementwise.gelu.bwd"] = {BoundSide::memory, 0.154, 0};
  p.calibrated = {"box \"7\"", "AMD EPYC", "", "cpu", "2026-11-30T23:00:00Z", "0436384abcd",
                  2, "6.1.0-28-amd64", "0123456789abcdef"};
  p.core_handoff_s = 3.25e-6;
  p.core_wake_s = 15.5e-6;
  p.alone_kernel_time_fraction = 0.8625;
  p.slowest_core_kernel_time_factor = 1.125;
  return p;
}

TEST(ProfileYaml, ACalibratedProfileLoadsBackAsWritten) {
  test::TempDir dir;
  const DeviceProfile p = calibrated_profile();
  const std::string path = (dir.path() / "localhost-calibrated.yaml").string();
  write_file_atomically(path, device_profile_yaml(p, "test"));
  const DeviceProfile back = load_device_profile(path);
  EXPECT_EQ(back.name, p.name);
  EXPECT_NEAR(back.launch_overhead_s, p.launch_overhead_s, 1e-15);
  EXPECT_NEAR(back.core_handoff_s, p.core_handoff_s, 1e-15);
  EXPECT_NEAR(back.core_wake_s, p.core_wake_s, 1e-15);
  EXPECT_NEAR(back.alone_kernel_time_fraction, p.alone_kernel_time_fraction, 1e-12);
  EXPECT_NEAR(back.slowest_core_kernel_time_factor, p.slowest_core_kernel_time_factor, 1e-12);
  EXPECT_NEAR(back.peak_fp32_flops_per_s / p.peak_fp32_flops_per_s, 1.0, 1e-9);
  EXPECT_NEAR(back.memory_bandwidth_bytes_per_s / p.memory_bandwidth_bytes_per_s, 1.0, 1e-9);
  ASSERT_EQ(back.efficiency_curves.size(), 2u);
  for (const auto& [cls, curve] : p.efficiency_curves) {
    const EfficiencyCurve& b = back.efficiency_curves.at(cls);
    EXPECT_EQ(b.bound, curve.bound) << cls;
    EXPECT_NEAR(b.max_efficiency, curve.max_efficiency, 1e-9 * curve.max_efficiency) << cls;
    EXPECT_NEAR(b.half_work, curve.half_work, 1e-9 * (1 + curve.half_work)) << cls;
  }
  for (int k = 0; k < kOpKindCount; ++k) {
    EXPECT_EQ(back.flop_efficiency[k], p.flop_efficiency[k]);
    EXPECT_EQ(back.memory_efficiency[k], p.memory_efficiency[k]);
  }
  EXPECT_EQ(back.calibrated.machine, "box \"7\"");
  EXPECT_EQ(back.calibrated.cpu_model, "AMD EPYC");
  EXPECT_EQ(back.calibrated.backend, "cpu");
  EXPECT_EQ(back.calibrated.date, "2026-11-30T23:00:00Z");
  EXPECT_EQ(back.calibrated.tandem_commit, "0436384abcd");
  EXPECT_EQ(back.calibrated.cores, 2);
  EXPECT_EQ(back.calibrated.kernel, "6.1.0-28-amd64");
  EXPECT_EQ(back.calibrated.machine_id, "0123456789abcdef");
}

TEST(ProfileYaml, TheClusterUsesTheProfileAndTheFittedLink) {
  test::TempDir dir;
  write_file_atomically((dir.path() / "dev.yaml").string(), device_profile_yaml(calibrated_profile(), "test"));
  CalibratedCluster c;
  c.name = "here";
  c.description = "test";
  c.device = "./dev.yaml";
  c.devices_per_node = 3;
  c.intra_link = {17.5e9, 12.5e-6};
  c.bus = {52.5e9, 0};
  c.shared_cores = 2;
  c.collectives = {{"all_reduce", 3, 9.5e-6, 4.5e9}, {"reduce_scatter", 2, 0.5e-6, 20e9}};
  const std::string path = (dir.path() / "here.yaml").string();
  write_file_atomically(path, cluster_yaml(c));
  const Cluster back = load_cluster(path);
  ASSERT_EQ(back.groups.size(), 1u);
  const NodeGroup& g = back.groups.front();
  EXPECT_EQ(g.device.name, "localhost-calibrated");
  EXPECT_EQ(g.devices_per_node, 3);
  EXPECT_EQ(g.shared_cores, 2);
  EXPECT_EQ(g.background_load, 0);
  EXPECT_NEAR(g.intra_link.bandwidth_bytes_per_s, 17.5e9, 1);
  EXPECT_NEAR(g.intra_link.latency_s, 12.5e-6, 1e-15);
  EXPECT_NEAR(g.intra_bus.bandwidth_bytes_per_s, 52.5e9, 1);
  ASSERT_EQ(g.collective_costs.size(), 2u);
  const CollectiveCost* all_reduce = g.collective_cost("all_reduce", 3);
  ASSERT_NE(all_reduce, nullptr);
  EXPECT_NEAR(all_reduce->latency_s, 9.5e-6, 1e-15);
  EXPECT_NEAR(all_reduce->bandwidth_bytes_per_s, 4.5e9, 1);
  EXPECT_NE(g.collective_cost("reduce_scatter", 2), nullptr);
}

}  // namespace
}  // namespace tandem::calibration
