#include "common/usable_cores.hpp"

#include <gtest/gtest.h>
#include <sched.h>

#include "tests/platforms/platform_test_support.hpp"

namespace tandem {
namespace {

TEST(UsableCores, TheAffinityMaskCountsNotTheMachinesCpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(::sched_getaffinity(0, sizeof set, &set), 0);
  EXPECT_EQ(usable_cores(), usable_cores(CPU_COUNT(&set), "/sys/fs/cgroup"));
  EXPECT_LE(usable_cores(), CPU_COUNT(&set));
  EXPECT_GE(usable_cores(), 1);
}

TEST(UsableCores, ACgroupQuotaCapsTheCoresRoundingUp) {
  test::TempDir v2, v1, unlimited, none;
  v2.write("cpu.max", "150000 100000\n");
  EXPECT_EQ(usable_cores(8, v2.path().string()), 2);
  EXPECT_EQ(usable_cores(1, v2.path().string()), 1);  // the affinity is smaller
  v1.write("cpu/cpu.cfs_quota_us", "300000\n");
  v1.write("cpu/cpu.cfs_period_us", "100000\n");
  EXPECT_EQ(usable_cores(8, v1.path().string()), 3);
  unlimited.write("cpu.max", "max 100000\n");
  EXPECT_EQ(usable_cores(8, unlimited.path().string()), 8);
  EXPECT_EQ(usable_cores(8, none.path().string()), 8);
  EXPECT_EQ(usable_cores(0, none.path().string()), 1);
}

}  // namespace
}  // namespace tandem
