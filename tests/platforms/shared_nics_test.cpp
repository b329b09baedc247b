// NICs shared by a node's devices (`nics_per_node`: "4 NICs shared by 8 GPUs", a NIC behind each
// PCIe switch): read and checked at its field, device d on NIC d / devices_per_nic, the node's
// uplink the NICs' sum. The simulated contention is pinned by PlatformBuilder.DevicesSharingANic...
#include <gtest/gtest.h>

#include "platforms/cluster.hpp"
#include "tests/platforms/platform_test_support.hpp"

namespace tandem {
namespace {

using test::BadCase;
using test::TempDir;

// Eight A100 and four 100 Gb/s NICs per node, as in an AWS p4d.24xlarge (8 A100, 400 Gb/s of EFA
// over 4 network cards; the latency here is only a test figure).
const std::string kFourNicsForEightGpus = R"(name: four-nics
network: { topology: star, switch_latency_us: 1 }
node_groups:
  - name: a100
    device: a100-sxm-40gb
    nodes: 2
    devices_per_node: 8
    nics_per_node: 4
    intra_node: { fabric: nvswitch, bandwidth_gb_per_s: 300, latency_us: 1 }
    nic: { bandwidth_gbit_per_s: 100, latency_us: 10 }
)";

TEST(SharedNics, FourNicsSharedByEightDevices) {
  TempDir dir;
  const Cluster c = load_cluster(dir.write("c.yaml", kFourNicsForEightGpus));
  const NodeGroup& g = c.groups[0];
  EXPECT_EQ(g.nics_per_node, 4);
  EXPECT_EQ(g.nic_count(), 4);
  EXPECT_EQ(g.devices_per_nic(), 2);
  EXPECT_EQ(c.node_uplink_bytes_per_s(0), 4 * 12.5e9) << "the NICs' sum, not the devices'";
  EXPECT_EQ(c.path_bandwidth_bytes_per_s(0, 8), 12.5e9) << "a lone flow: one NIC";
}

TEST(SharedNics, WithoutTheFieldEachDeviceHasItsOwn) {
  const Cluster c = find_cluster("tiny-h100");
  EXPECT_EQ(c.groups[0].nics_per_node, 0);
  EXPECT_EQ(c.groups[0].nic_count(), 4);
  EXPECT_EQ(c.groups[0].devices_per_nic(), 1);
  EXPECT_EQ(c.node_uplink_bytes_per_s(0), 4 * 50e9);
}

TEST(SharedNics, ACountThatDoesNotDivideTheDevicesIsRefusedAtItsField) {
  test::expect_input_errors_at_the_right_places(
      kFourNicsForEightGpus,
      {BadCase{"3 NICs for 8 devices", "nics_per_node: 4", "nics_per_node: 3", "node_groups[0].nics_per_node",
               "nics_per_node: 3", "must divide devices_per_node (8)"},
       BadCase{"more NICs than devices", "nics_per_node: 4", "nics_per_node: 16", "node_groups[0].nics_per_node",
               "nics_per_node: 16", "must divide devices_per_node (8)"},
       BadCase{"no NIC", "nics_per_node: 4", "nics_per_node: 0", "node_groups[0].nics_per_node", "nics_per_node: 0",
               "must be"},
       BadCase{"misspelt", "nics_per_node: 4", "nic_per_node: 4", "node_groups[0].nic_per_node", "nic_per_node: 4",
               "nics_per_node"}},
      [](const std::string& path) { load_cluster(path); });
}

}  // namespace
}  // namespace tandem
