// A node selection (platforms/cluster_selection.hpp): a smaller cluster of the same devices,
// written back as a cluster file that loads to the same thing.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "platforms/cluster_selection.hpp"

namespace tandem {
namespace {

TEST(ClusterSelection, KeepsTheSelectedNodesOfEachGroup) {
  const Cluster mixed = find_cluster("mixed");  // 8 H100 + 8 A100 + 8 V100 nodes of 8
  const Cluster part = select_nodes(mixed, {2, 0, 1});
  ASSERT_EQ(part.groups.size(), 2u);
  EXPECT_EQ(part.device_count(), 24);
  EXPECT_EQ(selected_devices(mixed, {2, 0, 1}), 24);
  EXPECT_EQ(part.device_of(0).name, mixed.device_of(0).name);
  EXPECT_EQ(part.device_of(16).name, mixed.groups[2].device.name);
  EXPECT_EQ(selection_text(mixed, {2, 0, 1}), "2 h100 + 1 v100");
  EXPECT_EQ(part.network.topology, mixed.network.topology);
}

TEST(ClusterSelection, RefusesImpossibleSelections) {
  const Cluster mixed = find_cluster("mixed");
  EXPECT_THROW(select_nodes(mixed, {0, 0, 0}), std::invalid_argument);
  EXPECT_THROW(select_nodes(mixed, {9, 0, 0}), std::invalid_argument);
  EXPECT_THROW(select_nodes(mixed, {1, 1}), std::invalid_argument);
}

TEST(ClusterSelection, WrittenFileLoadsAsTheSelection) {
  const Cluster mixed = find_cluster("mixed");
  const auto path = std::filesystem::temp_directory_path() / "tandem-selected-cluster-test.yaml";
  std::ofstream(path) << selected_cluster_yaml(mixed, {0, 3, 2});
  const Cluster back = load_cluster(path.string());
  const Cluster part = select_nodes(mixed, {0, 3, 2});
  ASSERT_EQ(back.groups.size(), part.groups.size());
  EXPECT_EQ(back.device_count(), part.device_count());
  for (std::size_t g = 0; g < back.groups.size(); ++g) {
    EXPECT_EQ(back.groups[g].device.name, part.groups[g].device.name);
    EXPECT_EQ(back.groups[g].node_count, part.groups[g].node_count);
    EXPECT_EQ(back.groups[g].nic.bandwidth_bytes_per_s, part.groups[g].nic.bandwidth_bytes_per_s);
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace tandem
