#include <gtest/gtest.h>

#include <filesystem>

#include "platforms/cluster.hpp"
#include "tests/cli/cli_test_support.hpp"
#include "tests/platforms/platform_test_support.hpp"

namespace tandem {
namespace {

using cli_test::run_tandem;

TEST(CalibrateCli, CudaWithoutACudaBuildIsRefusedWithStatusTwo) {
  const auto run = run_tandem("calibrate --backend cuda");
  EXPECT_EQ(run.status, 2) << run.out;
  EXPECT_NE(run.err.find("CUDA"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("--backend"), std::string::npos) << run.err;
}

TEST(CalibrateCli, AnUnknownBackendIsRefusedWithStatusTwo) {
  const auto run = run_tandem("calibrate --backend tpu");
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.err.find("tpu"), std::string::npos) << run.err;
}

TEST(CalibrateCli, WritesAProfileWithProvenanceAClusterThatUsesItAndTheRawMeasurements) {
  test::TempDir dir;
  const std::string device = (dir.path() / "here.yaml").string();
  const std::string cluster = (dir.path() / "here-cluster.yaml").string();
  const std::string csv = (dir.path() / "measured.csv").string();
  const auto run = run_tandem("calibrate --backend cpu --quick -o " + device + " --cluster-out " + cluster +
                              " --measurements-out " + csv);
  ASSERT_EQ(run.status, 0) << run.err;
  const DeviceProfile p = load_device_profile(device);
  EXPECT_FALSE(p.efficiency_curves.empty());
  EXPECT_TRUE(p.efficiency_curves.count("gemm"));
  EXPECT_FALSE(p.calibrated.machine.empty());
  EXPECT_FALSE(p.calibrated.cpu_model.empty());
  EXPECT_EQ(p.calibrated.backend, "cpu");
  EXPECT_FALSE(p.calibrated.date.empty());
  const Cluster c = load_cluster(cluster);
  EXPECT_EQ(c.groups.front().device.name, p.name);
  EXPECT_GT(c.groups.front().intra_link.bandwidth_bytes_per_s, 0);
  EXPECT_GT(c.groups.front().shared_cores, 0);
  // The raw measurements: a header, then compute ops with their class and communication steps.
  const std::string measured = cli_test::read_file(csv);
  EXPECT_EQ(measured.rfind("set,step,label,kind,kernel_class,flops,bytes,group_size,seconds\n", 0), 0u);
  EXPECT_NE(measured.find("\ncompute,0,"), std::string::npos);
  EXPECT_NE(measured.find(",gemm,gemm,"), std::string::npos);
  EXPECT_NE(measured.find("\ncomm,"), std::string::npos);
}

TEST(CalibrateCli, AMissingOutputFolderIsRefusedBeforeMeasuring) {
  const auto run = run_tandem("calibrate --backend cpu --quick -o /no/such/folder/p.yaml");
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.err.find("/no/such/folder"), std::string::npos) << run.err;
}

}  // namespace
}  // namespace tandem
