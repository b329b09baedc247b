// `tandem job`, the main job: both parts end with a report each (the modeled cluster's search,
// and this machine's search -> real run -> comparison), the machine is calibrated when asked or
// when its profile came from elsewhere, and bad input stops it with status 2.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/analysis/temp_dir_test_base.hpp"
#include "tests/cli/cli_test_support.hpp"

namespace tandem {
namespace {

using cli_test::run_tandem;
namespace fs = std::filesystem;

using cli_test::read_file;

class JobCli : public analysis_test::TempDirTest {};

TEST_F(JobCli, BothPartsEndWithAReportWhosePathIsPrinted) {
  // The small search scenario stands in for the 13B one, to keep the test short.
  const auto run = run_tandem("job -o " + path("out") + " --cluster-search search-tiny-h100 --workers 2 --iterations 3");
  ASSERT_EQ(run.status, 0) << run.err;
  const fs::path out = path("out");
  for (const char* report : {"cluster/report.html", "localhost/report.html"}) {
    EXPECT_TRUE(fs::exists(out / report)) << report;
    EXPECT_NE(run.out.find((out / report).string()), std::string::npos) << run.out;
  }
  // Part A: ranked search results and the winner's prediction.
  const std::string cluster = read_file(out / "cluster/report.html");
  EXPECT_NE(cluster.find("data-section=\"search\""), std::string::npos);
  const nlohmann::json search = nlohmann::json::parse(read_file(out / "cluster/search.json"));
  EXPECT_EQ(search["schema"], "tandem-search/1");
  EXPECT_FALSE(search["candidates"].empty());
  // Part B: the winner ran for real and was compared op by op with its prediction.
  const std::string local = read_file(out / "localhost/report.html");
  for (const char* section : {"timelines", "errors", "search", "memory"})
    EXPECT_NE(local.find("data-section=\"" + std::string(section) + "\""), std::string::npos) << section;
  const nlohmann::json compare = nlohmann::json::parse(read_file(out / "localhost/compare.json"));
  EXPECT_GT(compare["matched_ops"].get<int>(), 0);
  EXPECT_TRUE(compare["iteration_time"]["error"].is_number());
  EXPECT_NE(run.err.find("comparing prediction and measurement"), std::string::npos) << run.err;
}

TEST_F(JobCli, RecalibratingWritesAProfileOfThisMachineThatTheLocalSearchUses) {
  const auto run = run_tandem("job -o " + path("out") + " --skip-cluster --recalibrate --workers 2 --iterations 2");
  ASSERT_EQ(run.status, 0) << run.err;
  const fs::path profile = fs::path(path("out")) / "localhost/platforms/devices/localhost-calibrated.yaml";
  ASSERT_TRUE(fs::exists(profile));
  EXPECT_NE(read_file(profile).find("calibrated:"), std::string::npos);
  // The search ran on the job's own calibrated cluster, not the bundled one.
  EXPECT_NE(read_file(fs::path(path("out")) / "localhost/search-scenario.yaml").find("localhost/platforms/clusters"),
            std::string::npos);
}

TEST_F(JobCli, AMissingScenarioStopsTheJobWithStatus2NamingIt) {
  const auto run = run_tandem("job -o " + path("out") + " --skip-local --cluster-search " + path("nope.yaml"));
  EXPECT_EQ(run.status, 2) << run.err;
  EXPECT_NE(run.err.find("nope.yaml"), std::string::npos) << run.err;
}

TEST_F(JobCli, SkippingBothPartsIsBadInput) {
  const auto run = run_tandem("job -o " + path("out") + " --skip-local --skip-cluster");
  EXPECT_EQ(run.status, 2) << run.err;
}

}  // namespace
}  // namespace tandem
