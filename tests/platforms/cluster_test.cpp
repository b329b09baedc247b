#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "common/input_error.hpp"
#include "platforms/cluster.hpp"
#include "tests/platforms/platform_test_support.hpp"

namespace tandem {
namespace {

using test::line_of;
using test::TempDir;

TEST(ClusterLoad, EveryBundledClusterLoads) {
  const auto names = available_clusters();
  for (const char* expected : {"dgx-a100", "dgx-a100-4096", "dgx-h100", "localhost", "mixed", "tiny-h100"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end()) << expected;
  }
  for (const auto& name : names) {
    SCOPED_TRACE(name);
    const Cluster c = find_cluster(name);
    EXPECT_EQ(c.name, name);
    EXPECT_GT(c.device_count(), 0);
    EXPECT_FALSE(c.file.empty());
    // Ranks run group by group, node by node, device by device.
    int rank = 0;
    int global_node = 0;
    for (int g = 0; g < static_cast<int>(c.groups.size()); ++g) {
      EXPECT_EQ(c.first_rank(g), rank);
      EXPECT_EQ(c.first_node(g), global_node);
      for (int n = 0; n < c.groups[g].node_count; ++n, ++global_node) {
        for (int d = 0; d < c.groups[g].devices_per_node; ++d, ++rank) {
          if (rank % 97 != 0 && d != 0) continue;  // sample: the full walk is quadratic at 4096
          const DeviceLocation loc = c.locate(rank);
          ASSERT_EQ(loc.group, g);
          ASSERT_EQ(loc.node, n);
          ASSERT_EQ(loc.local, d);
          ASSERT_EQ(loc.global_node, global_node);
        }
      }
    }
    EXPECT_EQ(rank, c.device_count());
    EXPECT_EQ(global_node, c.node_count());
    EXPECT_THROW(c.locate(c.device_count()), std::out_of_range);
  }
}

TEST(ClusterLoad, DgxA100MatchesFacts) {
  const Cluster c = find_cluster("dgx-a100");
  EXPECT_EQ(c.device_count(), 1024);
  EXPECT_EQ(c.node_count(), 128);
  EXPECT_FALSE(c.is_heterogeneous());
  const NodeGroup& g = c.groups.at(0);
  EXPECT_EQ(g.device.name, "A100-SXM-80GB");
  EXPECT_EQ(g.fabric, IntraNodeFabric::nvswitch);
  EXPECT_EQ(g.intra_link.bandwidth_bytes_per_s, 300e9);  // NVLink 3: 600 GB/s bidirectional
  EXPECT_EQ(g.intra_bus.bandwidth_bytes_per_s, 0);
  EXPECT_EQ(g.nic.bandwidth_bytes_per_s, 25e9);  // HDR 200 Gb/s
  EXPECT_DOUBLE_EQ(g.nic.latency_s, 2e-6);
  EXPECT_EQ(c.network.topology, InterNodeTopology::fat_tree);
  EXPECT_EQ(c.network.nodes_per_leaf, 16);
  EXPECT_EQ(c.leaf_count(), 8);
  EXPECT_DOUBLE_EQ(c.node_uplink_bytes_per_s(0), 8 * 25e9);
  EXPECT_DOUBLE_EQ(c.leaf_uplink_bytes_per_s(0), 16 * 8 * 25e9);
}

TEST(ClusterLoad, DgxH100AndOthersMatchFacts) {
  const Cluster h = find_cluster("dgx-h100");
  EXPECT_EQ(h.device_count(), 1024);
  EXPECT_EQ(h.groups[0].device.name, "H100-SXM");
  EXPECT_EQ(h.groups[0].intra_link.bandwidth_bytes_per_s, 450e9);  // NVLink 4: 900 GB/s bidirectional
  EXPECT_EQ(h.groups[0].nic.bandwidth_bytes_per_s, 50e9);          // NDR 400 Gb/s

  EXPECT_EQ(find_cluster("dgx-a100-4096").device_count(), 4096);

  const Cluster tiny = find_cluster("tiny-h100");
  EXPECT_EQ(tiny.device_count(), 8);
  EXPECT_EQ(tiny.network.topology, InterNodeTopology::star);
  EXPECT_TRUE(tiny.same_node(0, 3));
  EXPECT_FALSE(tiny.same_node(3, 4));

  const Cluster local = find_cluster("localhost");
  EXPECT_EQ(local.device_count(), 2);
  EXPECT_EQ(local.node_count(), 1);
  EXPECT_EQ(local.groups[0].device.kind, "cpu");
  EXPECT_EQ(local.groups[0].fabric, IntraNodeFabric::shared_memory);
  EXPECT_EQ(local.groups[0].intra_bus.bandwidth_bytes_per_s, 12.8e9);
  EXPECT_EQ(local.groups[0].nic.bandwidth_bytes_per_s, 0);  // single node: no NIC needed
}

TEST(ClusterLoad, MixedIsHeterogeneousAndNumberedGroupByGroup) {
  const Cluster c = find_cluster("mixed");
  EXPECT_TRUE(c.is_heterogeneous());
  ASSERT_EQ(c.groups.size(), 3u);
  EXPECT_EQ(c.device_count(), 192);
  EXPECT_EQ(c.device_of(0).name, "H100-SXM");
  EXPECT_EQ(c.device_of(64).name, "A100-SXM-80GB");
  EXPECT_EQ(c.device_of(191).name, "V100-SXM2-32GB");
  const DeviceLocation loc = c.locate(64 + 8 * 3 + 5);
  EXPECT_EQ(loc.group, 1);
  EXPECT_EQ(loc.node, 3);
  EXPECT_EQ(loc.local, 5);
  EXPECT_EQ(loc.global_node, 11);
  EXPECT_EQ(c.leaf_count(), 3);
  EXPECT_EQ(c.leaf_of_node(11), 1);
  EXPECT_EQ(&c.group_of_node(23), &c.groups[2]);
}

TEST(ClusterLoad, PathFiguresFollowTheTopology) {
  const Cluster c = find_cluster("dgx-a100");
  const double s = 0.13e-6;
  EXPECT_EQ(c.switch_hops(0, 7), 0);
  EXPECT_EQ(c.switch_hops(0, 8), 1);          // node 0 -> node 1, same leaf
  EXPECT_EQ(c.switch_hops(0, 16 * 8), 3);     // leaf 0 -> leaf 1
  EXPECT_DOUBLE_EQ(c.path_latency_s(0, 7), 1e-6);
  EXPECT_DOUBLE_EQ(c.path_latency_s(0, 8), 4e-6 + s);
  EXPECT_DOUBLE_EQ(c.path_latency_s(0, 16 * 8), 4e-6 + 3 * s);
  EXPECT_EQ(c.path_latency_s(5, 5), 0);
  EXPECT_EQ(c.path_bandwidth_bytes_per_s(0, 7), 300e9);
  EXPECT_EQ(c.path_bandwidth_bytes_per_s(0, 16 * 8), 25e9);
  EXPECT_EQ(c.path_bandwidth_bytes_per_s(3, 3), 2039e9 / 2);

  const Cluster mixed = find_cluster("mixed");
  EXPECT_EQ(mixed.path_bandwidth_bytes_per_s(0, 64), 25e9);     // NDR meets HDR: HDR
  EXPECT_EQ(mixed.path_bandwidth_bytes_per_s(64, 128), 12.5e9);  // EDR
  EXPECT_DOUBLE_EQ(mixed.path_latency_s(0, 128), 2e-6 + 2.5e-6 + 3 * s);

  const Cluster tiny = find_cluster("tiny-h100");  // star: one switch
  EXPECT_DOUBLE_EQ(tiny.path_latency_s(0, 4), 4e-6 + 0.5e-6);
}

TEST(ClusterLoad, FindsByCaseInsensitiveNameOrPath) {
  EXPECT_EQ(find_cluster("DGX-A100").name, "dgx-a100");
  const std::string path = bundled_dir("platforms/clusters") + "/tiny-h100.yaml";
  EXPECT_EQ(find_cluster(path).file, path);
}

TEST(ClusterLoad, UnknownClusterListsTheBundledOnes) {
  try {
    find_cluster("frontier");
    FAIL();
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.field(), "cluster");
    EXPECT_NE(what.find("frontier"), std::string::npos);
    EXPECT_NE(what.find("dgx-h100"), std::string::npos);
  }
  EXPECT_THROW(find_cluster("/no/such/cluster.yaml"), InputError);
}

TEST(ClusterLoad, BundledDirFollowsTheEnvironment) {
  EXPECT_EQ(bundled_dir("platforms/devices"), std::string(TANDEM_SOURCE_DIR) + "/platforms/devices");
  ::setenv("TANDEM_DATA_DIR", "/opt/tandem-data", 1);
  EXPECT_EQ(bundled_dir("scenarios"), "/opt/tandem-data/scenarios");
  ::unsetenv("TANDEM_DATA_DIR");
  EXPECT_EQ(bundled_dir("scenarios"), std::string(TANDEM_SOURCE_DIR) + "/scenarios");
}

TEST(ClusterLoad, BitsOrBytesAndPcieBus) {
  TempDir dir;
  const std::string path = dir.write("pcie.yaml", R"(name: pcie-box
network: { topology: star }
node_groups:
  - name: a
    device: h100-sxm
    nodes: 2
    devices_per_node: 4
    intra_node:
      fabric: pcie
      bandwidth_gb_per_s: 32
      latency_us: 3
      bus: { bandwidth_gbit_per_s: 512, latency_us: 0.5 }
    nic: { bandwidth_gb_per_s: 12.5, latency_us: 2 }
)");
  const Cluster c = load_cluster(path);
  const NodeGroup& g = c.groups[0];
  EXPECT_EQ(g.fabric, IntraNodeFabric::pcie);
  EXPECT_EQ(g.intra_link.bandwidth_bytes_per_s, 32e9);
  EXPECT_EQ(g.intra_bus.bandwidth_bytes_per_s, 64e9);
  EXPECT_DOUBLE_EQ(g.intra_bus.latency_s, 0.5e-6);
  EXPECT_EQ(c.network.switch_latency_s, 0);
  EXPECT_DOUBLE_EQ(c.path_latency_s(0, 1), 3.5e-6);
  EXPECT_DOUBLE_EQ(c.path_latency_s(0, 4), 2e-6 + 2e-6 + 0.5e-6 + 0.5e-6);  // buses on the NIC path
  EXPECT_EQ(c.path_bandwidth_bytes_per_s(0, 4), 12.5e9);
}

TEST(ClusterLoad, DeviceByPathRelativeToTheClusterFile) {
  TempDir dir;
  dir.write("devs/accel.yaml", R"(name: Accel
kind: gpu
peak_fp32_tflops: 10
peak_bf16_tflops: 100
peak_fp16_tflops: 100
memory_bandwidth_gb_per_s: 1000
memory_capacity_gb: 24
idle_power_w: 30
busy_power_w: 300
launch_overhead_us: 3
)");
  const std::string path = dir.write("c.yaml", R"(name: one-box
node_groups:
  - { name: a, device: devs/accel.yaml, nodes: 1, devices_per_node: 1 }
)");
  const Cluster c = load_cluster(path);
  EXPECT_EQ(c.device_of(0).name, "Accel");
  EXPECT_EQ(c.device_count(), 1);
  // ... and by name from a given devices folder.
  const std::string by_name = dir.write("d.yaml", R"(name: one-box
node_groups:
  - { name: a, device: accel, nodes: 1, devices_per_node: 1 }
)");
  EXPECT_EQ(load_cluster(by_name, (dir.path() / "devs").string()).device_of(0).name, "Accel");
}

TEST(ClusterLoad, ErrorsInsideADeviceProfileNameTheProfile) {
  TempDir dir;
  const std::string device = dir.write("devs/bad.yaml", "name: Bad\nkind: gpu\n");
  const std::string path = dir.write("c.yaml", R"(name: one-box
node_groups:
  - { name: a, device: devs/bad.yaml, nodes: 1, devices_per_node: 1 }
)");
  try {
    load_cluster(path);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), device) << e.what();
    EXPECT_EQ(e.field(), "peak_fp32_tflops") << e.what();
  }
}

TEST(ClusterLoad, NoNodeGroupsIsAnInputError) {
  TempDir dir;
  const std::string path = dir.write("empty.yaml", "name: empty\nnode_groups: []\n");
  try {
    load_cluster(path);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "node_groups");
    EXPECT_EQ(e.line(), 2);
  }
}

// CPU devices that are threads of one machine, with collective costs measured there.
const char* const kSharedMemory = R"(name: cores
node_groups:
  - name: cpu
    device: cpu-generic
    nodes: 1
    devices_per_node: 4
    shared_cores: 2
    intra_node:
      fabric: shared_memory
      bandwidth_gb_per_s: 40
      latency_us: 2
      bus: { bandwidth_gb_per_s: 160 }
      collectives:
        - { kind: all_reduce, ranks: 4, latency_us: 10, bandwidth_gb_per_s: 5 }
        - { kind: all_gather, ranks: 2, latency_us: 0.5, bandwidth_gb_per_s: 50 }
)";

TEST(ClusterLoad, MeasuredCollectiveCostsAreLookedUpByKindAndGroupSize) {
  TempDir dir;
  const Cluster c = load_cluster(dir.write("cores.yaml", kSharedMemory));
  const NodeGroup& g = c.groups.front();
  const CollectiveCost* all_reduce = g.collective_cost("all_reduce", 4);
  ASSERT_NE(all_reduce, nullptr);
  EXPECT_DOUBLE_EQ(all_reduce->seconds(16384), 10e-6 + 16384 / 5e9);
  ASSERT_NE(g.collective_cost("all_gather", 2), nullptr);
  EXPECT_EQ(g.collective_cost("all_reduce", 2), nullptr);  // not measured: transfers over the links
  EXPECT_EQ(g.collective_cost("broadcast", 4), nullptr);
}

TEST(ClusterLoad, BadCollectiveCostsNameTheirField) {
  const auto load = [](const std::string& path) { load_cluster(path); };
  for (const test::BadCase& bad : {
           test::BadCase{"unknown kind", "kind: all_gather", "kind: all_gathr",
                         "node_groups[0].intra_node.collectives[1].kind", "all_gathr", "must be all_reduce"},
           test::BadCase{"more ranks than devices", "ranks: 4", "ranks: 5",
                         "node_groups[0].intra_node.collectives[0].ranks", "ranks: 5", "between 2 and devices_per_node"},
           test::BadCase{"zero bandwidth", "bandwidth_gb_per_s: 5 }", "bandwidth_gb_per_s: 0 }",
                         "node_groups[0].intra_node.collectives[0].bandwidth_gb_per_s", "bandwidth_gb_per_s: 0 }",
                         "must be positive"},
           test::BadCase{"twice the same", "kind: all_gather, ranks: 2", "kind: all_reduce, ranks: 4",
                         "node_groups[0].intra_node.collectives[1]", "latency_us: 0.5", "a second cost"},
           test::BadCase{"not shared memory", "fabric: shared_memory", "fabric: pcie",
                         "node_groups[0].intra_node.collectives", "collectives:", "shared_memory fabrics"},
       })
    test::expect_input_error_at_the_right_place(kSharedMemory, bad, load);
}

// ---- bad input: each class names the file, the line and the field ----

const char* const kGood = R"(name: test-cluster
network:
  topology: fat_tree
  nodes_per_leaf: 2
  oversubscription: 2
  switch_latency_us: 0.5
node_groups:
  - name: h100
    device: h100-sxm
    nodes: 4
    devices_per_node: 8
    intra_node: { fabric: nvswitch, bandwidth_gb_per_s: 450, latency_us: 1.0 }
    nic: { bandwidth_gbit_per_s: 400, latency_us: 2.0 }
  - name: a100
    device: a100-sxm-80gb
    nodes: 2
    devices_per_node: 8
    intra_node: { fabric: nvswitch, bandwidth_gb_per_s: 300, latency_us: 1.0 }
    nic: { bandwidth_gb_per_s: 25, latency_us: 2.0 }
)";

TEST(ClusterLoad, GoodTemplateLoads) {
  TempDir dir;
  const Cluster c = load_cluster(dir.write("good.yaml", kGood));
  EXPECT_EQ(c.device_count(), 48);
  EXPECT_EQ(c.leaf_count(), 3);
  EXPECT_EQ(c.network.oversubscription, 2);
  EXPECT_DOUBLE_EQ(c.leaf_uplink_bytes_per_s(0), 2 * 8 * 50e9 / 2);
  EXPECT_DOUBLE_EQ(c.leaf_uplink_bytes_per_s(2), 2 * 8 * 25e9 / 2);
  EXPECT_DOUBLE_EQ(c.network.switch_latency_s, 0.5e-6);
}

using test::BadCase;

class ClusterLoadBadInput : public ::testing::TestWithParam<BadCase> {};

TEST_P(ClusterLoadBadInput, RaisesInputErrorAtTheRightPlace) {
  test::expect_input_error_at_the_right_place(kGood, GetParam(),
                                              [](const std::string& path) { load_cluster(path); });
}

INSTANTIATE_TEST_SUITE_P(
    ClusterLoad, ClusterLoadBadInput,
    ::testing::Values(
        BadCase{"yaml syntax", "  topology: fat_tree\n", "  topology: fat_tree\n   bad indent: [\n", "network.topology",
                "bad indent", "YAML syntax error"},
        BadCase{"missing nodes", "    nodes: 2\n", "", "node_groups[1].nodes", "- name: a100",
                "missing required field"},
        BadCase{"negative nic bandwidth", "bandwidth_gb_per_s: 25", "bandwidth_gb_per_s: -25",
                "node_groups[1].nic.bandwidth_gb_per_s", "bandwidth_gb_per_s: -25", "must be positive"},
        BadCase{"zero intra bandwidth", "bandwidth_gb_per_s: 450", "bandwidth_gb_per_s: 0",
                "node_groups[0].intra_node.bandwidth_gb_per_s", "bandwidth_gb_per_s: 0", "must be positive"},
        BadCase{"unknown device", "device: a100-sxm-80gb", "device: a100-pcie-80gb", "node_groups[1].device",
                "a100-pcie-80gb", "unknown device 'a100-pcie-80gb' (available in"},
        BadCase{"unknown field", "  nodes_per_leaf: 2", "  node_per_leaf: 2", "network.node_per_leaf",
                "node_per_leaf", "unknown field"},
        BadCase{"unknown group field", "    nodes: 4\n", "    nodes: 4\n    gpus: 8\n", "node_groups[0].gpus",
                "gpus", "unknown field"},
        BadCase{"zero nodes", "nodes: 4", "nodes: 0", "node_groups[0].nodes", "nodes: 0", "positive"},
        BadCase{"fractional devices", "devices_per_node: 8", "devices_per_node: 7.5",
                "node_groups[0].devices_per_node", "7.5", "whole number"},
        BadCase{"bad fabric", "fabric: nvswitch, bandwidth_gb_per_s: 300", "fabric: nvlink, bandwidth_gb_per_s: 300",
                "node_groups[1].intra_node.fabric", "nvlink", "must be nvswitch, pcie or shared_memory"},
        BadCase{"bad topology", "topology: fat_tree", "topology: torus", "network.topology", "torus",
                "must be star or fat_tree"},
        BadCase{"pcie without bus", "fabric: nvswitch, bandwidth_gb_per_s: 450",
                "fabric: pcie, bandwidth_gb_per_s: 450", "node_groups[0].intra_node.bus", "fabric: pcie",
                "missing required field"},
        BadCase{"nvswitch with bus", "latency_us: 1.0 }\n    nic: { bandwidth_gbit",
                "latency_us: 1.0, bus: { bandwidth_gb_per_s: 64 } }\n    nic: { bandwidth_gbit",
                "node_groups[0].intra_node.bus", "bus:", "only pcie and shared_memory"},
        BadCase{"bits and bytes", "bandwidth_gbit_per_s: 400,", "bandwidth_gbit_per_s: 400, bandwidth_gb_per_s: 50,",
                "node_groups[0].nic.bandwidth_gbit_per_s", "bandwidth_gbit_per_s: 400", "not both"},
        BadCase{"missing nic", "    nic: { bandwidth_gb_per_s: 25, latency_us: 2.0 }\n", "",
                "node_groups[1].nic", "- name: a100", "needs each group's nic"},
        BadCase{"missing latency", "nic: { bandwidth_gb_per_s: 25, latency_us: 2.0 }",
                "nic: { bandwidth_gb_per_s: 25 }", "node_groups[1].nic.latency_us", "bandwidth_gb_per_s: 25 }",
                "missing required field"},
        BadCase{"negative latency", "switch_latency_us: 0.5", "switch_latency_us: -0.5",
                "network.switch_latency_us", "switch_latency_us", "must not be negative"},
        BadCase{"leaf size on a star", "topology: fat_tree", "topology: star", "network.nodes_per_leaf",
                "nodes_per_leaf", "only a fat_tree"},
        BadCase{"zero leaf size", "nodes_per_leaf: 2", "nodes_per_leaf: 0", "network.nodes_per_leaf",
                "nodes_per_leaf", "positive"},
        BadCase{"missing network", "network:\n  topology: fat_tree\n  nodes_per_leaf: 2\n  oversubscription: 2\n"
                "  switch_latency_us: 0.5\n", "", "network", "name: test-cluster", "missing required field"},
        BadCase{"duplicate group", "- name: a100", "- name: h100", "node_groups[1].name", "- name: h100\n    device: a100",
                "duplicate node group name"}),
    [](const ::testing::TestParamInfo<BadCase>& info) {
      std::string name = info.param.what;
      for (char& ch : name) {
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      }
      return name;
    });

}  // namespace
}  // namespace tandem
