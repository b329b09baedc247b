// Every number of a device profile and a cluster is range-checked when it is read
// (common/input_limits.hpp): values that made SimGrid abort ("The Impossible Did Happen" for a
// link of 1e300 or 1e-320 GB/s) or deadlock (peak_fp32_tflops 1e-320, launch_overhead_us 1e308),
// and counts that wrapped or exhausted memory, are InputErrors at their file, line and field.
#include <gtest/gtest.h>

#include "platforms/cluster.hpp"
#include "platforms/device.hpp"
#include "tests/platforms/platform_test_support.hpp"

namespace tandem {
namespace {

using test::BadCase;

TEST(PlatformLimits, DeviceNumbersAreInputErrorsAtTheField) {
  test::expect_input_errors_at_the_right_places(
      test::bundled_text("platforms/devices/h100-sxm.yaml"),
      {
        BadCase{"subnormal peak", "peak_fp32_tflops: 67", "peak_fp32_tflops: 1e-320", "peak_fp32_tflops",
                "peak_fp32_tflops", "must be"},
        BadCase{"huge peak", "peak_bf16_tflops: 989", "peak_bf16_tflops: 1e300", "peak_bf16_tflops",
                "peak_bf16_tflops", "must be between"},
        BadCase{"infinite peak", "peak_fp16_tflops: 989", "peak_fp16_tflops: .inf", "peak_fp16_tflops",
                "peak_fp16_tflops", "expected a number"},
        BadCase{"huge launch overhead", "launch_overhead_us: 4", "launch_overhead_us: 1e308", "launch_overhead_us",
                "launch_overhead_us", "must be between"},
        BadCase{"huge memory bandwidth", "memory_bandwidth_gb_per_s: 3350", "memory_bandwidth_gb_per_s: 1e300",
                "memory_bandwidth_gb_per_s", "memory_bandwidth_gb_per_s", "must be between"},
        BadCase{"tiny memory", "memory_capacity_gb: 80", "memory_capacity_gb: 1e-320", "memory_capacity_gb",
                "memory_capacity_gb", "must be"},
        BadCase{"huge power", "busy_power_w: 700", "busy_power_w: 1e12", "busy_power_w", "busy_power_w",
                "must be between"},
        BadCase{"negative price", "price_per_hour_usd: 12.29", "price_per_hour_usd: -1", "price_per_hour_usd",
                "price_per_hour_usd", "must not be negative"},
        BadCase{"duplicate key", "kind: gpu", "kind: gpu\nkind: cpu", "kind", "kind: cpu", "given twice"},
        BadCase{"second document", "kind: gpu", "kind: gpu\n---\nkind: cpu", "kind", "kind: cpu", "second YAML document"}},
      [](const std::string& path) { load_device_profile(path); });
}

TEST(PlatformLimits, ClusterNumbersAreInputErrorsAtTheField) {
  test::expect_input_errors_at_the_right_places(
      test::bundled_text("platforms/clusters/tiny-h100.yaml"),
      {
        BadCase{"link of 1e300 GB/s", "bandwidth_gb_per_s: 450", "bandwidth_gb_per_s: 1e300",
                "node_groups[0].intra_node.bandwidth_gb_per_s", "intra_node", "must be between"},
        BadCase{"link of 1e-320 GB/s", "bandwidth_gb_per_s: 450", "bandwidth_gb_per_s: 1e-320",
                "node_groups[0].intra_node.bandwidth_gb_per_s", "intra_node", "must be"},
        BadCase{"nic of 1e300 Gb/s", "bandwidth_gbit_per_s: 400", "bandwidth_gbit_per_s: 1e300",
                "node_groups[0].nic.bandwidth_gbit_per_s", "nic:", "must be between"},
        BadCase{"latency of 1e308 us", "latency_us: 2.0", "latency_us: 1e308", "node_groups[0].nic.latency_us",
                "nic:", "must be between"},
        BadCase{"switch latency nan", "switch_latency_us: 0.5", "switch_latency_us: .nan", "network.switch_latency_us",
                "switch_latency_us", "expected a number"},
        BadCase{"a million nodes", "nodes: 2", "nodes: 1000000", "node_groups[0].nodes", "nodes:",
                "must be a whole number between"},
        BadCase{"nodes that wrap", "nodes: 2", "nodes: 4294967298", "node_groups[0].nodes", "nodes:",
                "must be a whole number between"},
        BadCase{"too many devices together", "devices_per_node: 4", "devices_per_node: 200000",
                "node_groups[0].nodes", "nodes:", "more than the 262144"},
        BadCase{"duplicate group key", "    nodes: 2\n", "    nodes: 2\n    nodes: 3\n", "node_groups[0].nodes",
                "nodes: 3", "first at line"}},
      [](const std::string& path) { load_cluster(path); });
}

}  // namespace
}  // namespace tandem
