// What commands ask of a cluster beyond its links: whether it is this machine as the CPU backend
// runs it (one node of cpu devices, whatever its name), and what its devices cost per second.
#include <gtest/gtest.h>

#include "platforms/cluster.hpp"
#include "tests/platforms/platform_test_support.hpp"

namespace tandem {
namespace {

TEST(ClusterQueries, OneNodeOfCpuDevicesIsThisMachineUnderAnyName) {
  EXPECT_TRUE(is_this_machine(find_cluster("localhost")));
  EXPECT_TRUE(is_this_machine(find_cluster("localhost-calibrated")));
  Cluster renamed = find_cluster("localhost-calibrated");
  renamed.name = "my-laptop";
  EXPECT_TRUE(is_this_machine(renamed));
  EXPECT_FALSE(is_this_machine(find_cluster("tiny-h100"))) << "GPUs";
  Cluster two_nodes = find_cluster("localhost");
  two_nodes.groups[0].node_count = 2;
  EXPECT_FALSE(is_this_machine(two_nodes)) << "two machines";
}

TEST(ClusterQueries, PricePerSecondSumsTheDevicesUsedAndIsZeroWhenOneIsUnpriced) {
  const Cluster mixed = find_cluster("mixed-h100-a100-64");  // ranks 0-31 H100, 32-63 A100
  const double h100 = mixed.device_of(0).price_per_hour_usd, a100 = mixed.device_of(32).price_per_hour_usd;
  ASSERT_GT(h100, 0);
  ASSERT_GT(a100, 0);
  EXPECT_DOUBLE_EQ(mixed.usd_per_s(8), 8 * h100 / 3600);
  EXPECT_DOUBLE_EQ(mixed.usd_per_s(64), (32 * h100 + 32 * a100) / 3600);
  Cluster unpriced = mixed;
  unpriced.groups[1].device.price_per_hour_usd = 0;
  EXPECT_DOUBLE_EQ(unpriced.usd_per_s(32), 32 * h100 / 3600) << "the priced ranks only";
  EXPECT_EQ(unpriced.usd_per_s(33), 0) << "a partial sum would understate the cost";
}

}  // namespace
}  // namespace tandem
