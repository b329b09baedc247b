// `tandem check` and `tandem fields` end to end: every bundled description loads and is
// described in one line; a bad one is reported at its file, line and field with exit status 2,
// without hiding the files after it; the field reference is the readers' own tables.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "platforms/cluster.hpp"
#include "platforms/cluster_fields.hpp"
#include "platforms/device_fields.hpp"
#include "platforms/failure_fields.hpp"
#include "scenarios/reliability_fields.hpp"
#include "scenarios/scenario_fields.hpp"
#include "tests/cli/cli_test_support.hpp"
#include "tests/platforms/platform_test_support.hpp"

namespace tandem {
namespace {

namespace fs = std::filesystem;
using cli_test::CliRun;
using cli_test::run_tandem;

std::vector<std::string> yaml_files(const std::string& sub) {
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(bundled_dir(sub)))
    if (entry.path().extension() == ".yaml") files.push_back(entry.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

std::string joined(const std::vector<std::string>& files) {
  std::string text;
  for (const auto& f : files) text += " " + f;
  return text;
}

TEST(CheckCli, EveryBundledClusterDeviceAndScenarioChecksOk) {
  std::vector<std::string> files = yaml_files("platforms/clusters");
  for (const auto& f : yaml_files("platforms/devices")) files.push_back(f);
  for (const auto& f : yaml_files("scenarios")) files.push_back(f);
  const CliRun run = run_tandem("check" + joined(files));
  EXPECT_EQ(run.status, 0) << run.err;
  for (const auto& f : files) EXPECT_NE(run.out.find(f + ": ok: "), std::string::npos) << f << "\n" << run.out;
}

TEST(CheckCli, SaysWhatAClusterHolds) {
  const CliRun run = run_tandem("check " + bundled_dir("platforms/clusters/mixed-h100-a100-64.yaml"));
  ASSERT_EQ(run.status, 0) << run.err;
  for (const char* needle : {"cluster 'mixed-h100-a100-64'", "64 devices on 8 nodes", "4 x 8 H100-SXM",
                             "4 x 8 A100-SXM-80GB", "8 NICs/node 50 GB/s", "fat_tree"})
    EXPECT_NE(run.out.find(needle), std::string::npos) << needle << "\n" << run.out;
}

TEST(CheckCli, SaysWhatADeviceAndAScenarioAre) {
  const CliRun run = run_tandem("check " + bundled_dir("platforms/devices/h100-sxm.yaml") + " gpt3-175b-3d");
  ASSERT_EQ(run.status, 0) << run.err;
  for (const char* needle : {"device 'H100-SXM' (gpu)", "80 GB", "$12.3/h", "scenario 'gpt3-175b-3d'",
                             "1024 of the", "cluster 'dgx-a100'"})
    EXPECT_NE(run.out.find(needle), std::string::npos) << needle << "\n" << run.out;
}

TEST(CheckCli, ABadFileIsReportedAtItsLineAndFieldWithoutHidingTheNext) {
  test::TempDir dir;
  std::string text = test::bundled_text("platforms/clusters/tiny-h100.yaml");
  text.replace(text.find("nodes: 2"), 8, "nodes: 0");
  const std::string bad = dir.write("bad.yaml", text);
  const std::string good = bundled_dir("platforms/clusters/tiny-h100.yaml");
  const CliRun run = run_tandem("check " + bad + " " + good);
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.err.find(bad + ":" + std::to_string(test::line_of(text, "nodes: 0")) + ": field 'node_groups[0].nodes'"),
            std::string::npos)
      << run.err;
  EXPECT_NE(run.out.find(good + ": ok: cluster 'tiny-h100'"), std::string::npos) << run.out;
  EXPECT_EQ(run.out.find(bad + ": ok"), std::string::npos) << run.out;
}

TEST(CheckCli, AFileOfNoKnownKindIsRefused) {
  test::TempDir dir;
  const std::string odd = dir.write("odd.yaml", "colour: blue\n");
  const CliRun run = run_tandem("check " + odd);
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.err.find(odd + ":1: not a cluster"), std::string::npos) << run.err;
}

TEST(CheckCli, AMissingFileIsAnInputError) {
  const CliRun run = run_tandem("check no-such-file.yaml");
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.err.find("no-such-file.yaml"), std::string::npos) << run.err;
}

// The reference lists each field of each section with its range, from the tables the readers
// check keys against: a field added to a reader is in the reference, or the reader refuses it.
void expect_reference_lists(const std::string& kind, std::span<const FieldSection> sections) {
  const CliRun run = run_tandem("fields " + kind);
  ASSERT_EQ(run.status, 0) << run.err;
  for (const FieldSection& section : sections) {
    const std::string heading = std::string(section.path[0] == '\0' ? "(top level)" : section.path) + ":\n";
    const auto at = run.out.find(heading);
    ASSERT_NE(at, std::string::npos) << heading;
    for (const FieldDoc& f : section.fields)
      EXPECT_NE(run.out.find("  " + std::string(f.name) + " ", at), std::string::npos) << section.path << "." << f.name;
  }
}

TEST(FieldsCli, ListsEveryFieldOfEverySectionOfEachKind) {
  expect_reference_lists("cluster", cluster_fields::kSections);
  expect_reference_lists("device", device_fields::kSections);
  expect_reference_lists("scenario", scenario_fields::kSections);
  expect_reference_lists("reliability", reliability_fields::kSections);
  expect_reference_lists("failures", failure_fields::kSections);
}

TEST(FieldsCli, GivesDefaultsUnitsAndTheCheckedRanges) {
  const CliRun run = run_tandem("fields cluster");
  ASSERT_EQ(run.status, 0) << run.err;
  for (const char* needle : {"nics_per_node", "default devices_per_node", "Gb/s (1e9 bits, per direction)",
                             "(accepted: [1, 262144])", "(accepted: [0, 1e+06] us)"})
    EXPECT_NE(run.out.find(needle), std::string::npos) << needle << "\n" << run.out;
}

TEST(ExplainCli, EveryBundledScenarioIsExplainedAndABadOneIsAnInputError) {
  for (const auto& f : yaml_files("scenarios")) {
    const CliRun run = run_tandem("explain " + f);
    EXPECT_EQ(run.status, 0) << f << "\n" << run.err;
    EXPECT_NE(run.out.find("strategy:"), std::string::npos) << f;
  }
  EXPECT_EQ(run_tandem("explain no-such-scenario").status, 2);
}

TEST(FieldsCli, AnUnknownKindIsABadCommandLine) {
  EXPECT_EQ(run_tandem("fields colours").status, 2);
}

}  // namespace
}  // namespace tandem
