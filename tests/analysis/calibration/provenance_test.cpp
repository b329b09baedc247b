// A bundled profile describes this machine only when it was measured in this very installation
// and boot: every VM of a fleet is "vm" with an "AMD EPYC", and a brand-new Debian root on it
// shares the host name, CPU, cores and kernel (issue 17: a fresh root skipped its calibration).

#include "analysis/calibration/provenance.hpp"

#include <gtest/gtest.h>

#include "tests/platforms/platform_test_support.hpp"

namespace tandem::calibration {
namespace {

// A root with these /etc/machine-id and boot id ("" leaves the file out).
std::string fake_root(const test::TempDir& dir, const std::string& id, const std::string& boot) {
  if (!id.empty()) dir.write("etc/machine-id", id + "\n");
  if (!boot.empty()) dir.write("proc/sys/kernel/random/boot_id", boot + "\n");
  return dir.path().string();
}

TEST(Provenance, TheMachineIdNamesTheInstallationAndTheBoot) {
  test::TempDir a, a_rebooted, b, fresh, unbooted;
  const std::string id_a = machine_id(fake_root(a, "3d1219c7c4c5404aaa1f6d2a48adfda4", "b21a6628"));
  EXPECT_EQ(id_a.size(), 16u);
  EXPECT_EQ(id_a, machine_id(a.path().string()));  // stable
  EXPECT_NE(id_a, machine_id(fake_root(a_rebooted, "3d1219c7c4c5404aaa1f6d2a48adfda4", "9f0e0a11")));
  EXPECT_NE(id_a, machine_id(fake_root(b, "77aa19c7c4c5404aaa1f6d2a48adfd00", "b21a6628")));
  EXPECT_EQ(machine_id(fake_root(fresh, "", "b21a6628")), "");  // a fresh root has none of its own
  EXPECT_EQ(machine_id(fake_root(unbooted, "uninitialized", "b21a6628")), "");
  EXPECT_EQ(id_a.find("3d1219c7"), std::string::npos);  // the raw id is not written out
}

TEST(Provenance, ThisMachineMatchesItselfWhenItHasAMachineId) {
  const DeviceProfile::Provenance here = this_machine("cpu", "");
  EXPECT_GE(here.cores, 1);
  EXPECT_FALSE(here.kernel.empty());
  if (here.machine_id.empty()) GTEST_SKIP() << "this machine has no /etc/machine-id: nothing can match it";
  EXPECT_EQ(not_this_machine(here, here), "");
}

TEST(Provenance, AnotherMachineWithTheSameNameCpuCoresAndKernelDoesNotMatch) {
  DeviceProfile::Provenance there;
  there.machine = "vm";
  there.cpu_model = "AMD EPYC";
  there.cores = 2;
  there.kernel = "6.1.0-28-amd64";
  there.machine_id = "0123456789abcdef";
  DeviceProfile::Provenance here = there;
  EXPECT_EQ(not_this_machine(there, here), "");

  here.machine_id = "fedcba9876543210";
  EXPECT_NE(not_this_machine(there, here).find("machine id differs"), std::string::npos);
  here.machine_id = "";  // a fresh root without /etc/machine-id
  EXPECT_NE(not_this_machine(there, here).find("no machine id"), std::string::npos);
  DeviceProfile::Provenance old_profile = there;  // written before machine ids were recorded
  old_profile.machine_id = "";
  EXPECT_NE(not_this_machine(old_profile, there), "");
}

TEST(Provenance, WhatDiffersIsSaid) {
  DeviceProfile::Provenance there{"vm", "AMD EPYC", "", "cpu", "", "", 2, "6.1", "0123456789abcdef"};
  DeviceProfile::Provenance here = there;
  here.cores = 1;  // taskset -c 0
  here.cpu_model = "Intel Xeon";
  const std::string why = not_this_machine(there, here);
  EXPECT_NE(why.find("cores '2' there, '1' here"), std::string::npos) << why;
  EXPECT_NE(why.find("CPU 'AMD EPYC' there, 'Intel Xeon' here"), std::string::npos) << why;
}

}  // namespace
}  // namespace tandem::calibration
