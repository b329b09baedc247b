// Traces as the commands write them: compact (tandem-trace/2), gzip when the name ends in .gz
// (and read back so by compare and report), Perfetto processes named with the rank's device and
// node; `run` on a calibrated CPU cluster of any name, and its trace compared with a prediction
// of a differently named scenario (with a warning).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <set>
#include <string>

#include "common/gzip.hpp"
#include "platforms/cluster.hpp"
#include "tests/cli/cli_test_support.hpp"
#include "tests/platforms/platform_test_support.hpp"

namespace tandem {
namespace {

namespace fs = std::filesystem;
using cli_test::CliRun;
using cli_test::read_file;
using cli_test::run_tandem;

TEST(TraceOutputsCli, GzipTracesAreWrittenAndReadBackWithDeviceAndNodeInProcessNames) {
  const fs::path dir = cli_test::fresh_dir("tandem-trace-outputs", "gzip");
  const std::string trace = (dir / "pred.json.gz").string(), chrome = (dir / "timeline.json.gz").string();
  const CliRun run = run_tandem("simulate gpt2-124m-dp8 --trace " + trace + " --chrome-trace " + chrome);
  ASSERT_EQ(run.status, 0) << run.err;
  const std::string packed = read_file(chrome);
  ASSERT_GT(packed.size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>(packed[0]), 0x1f) << "a gzip stream";
  EXPECT_EQ(static_cast<unsigned char>(packed[1]), 0x8b);
  const auto timeline = nlohmann::json::parse(gzip_decompress(packed, 1u << 30));
  int named = 0;
  for (const auto& e : timeline["traceEvents"])
    if (e["name"] == "process_name") {
      EXPECT_NE(e["args"]["name"].get<std::string>().find(": H100-SXM, node "), std::string::npos) << e.dump();
      ++named;
    }
  EXPECT_EQ(named, 8);
  const CliRun compare = run_tandem("compare " + trace + " " + trace);
  EXPECT_EQ(compare.status, 0) << compare.err;
  EXPECT_NE(compare.out.find("alignment"), std::string::npos) << compare.out;
}

TEST(TraceOutputsCli, APlainTraceIsTheCompactSchema) {
  const fs::path dir = cli_test::fresh_dir("tandem-trace-outputs", "plain");
  const std::string trace = (dir / "pred.json").string();
  ASSERT_EQ(run_tandem("simulate gpt2-124m-dp8 --trace " + trace).status, 0);
  const auto doc = nlohmann::json::parse(read_file(trace));
  EXPECT_EQ(doc["schema"], "tandem-trace/2");
  EXPECT_EQ(doc["ranks"].size(), 8u);
  EXPECT_EQ(doc["ranks"][4]["node"], 1) << "tiny-h100: 4 devices per node";
}

TEST(TraceOutputsCli, TraceRanksKeepsOnlyTheRanksAskedFor) {
  const fs::path dir = cli_test::fresh_dir("tandem-trace-outputs", "ranks");
  const std::string trace = (dir / "pred.json").string();
  ASSERT_EQ(run_tandem("simulate gpt2-124m-dp8 --trace-ranks 0,4-5 --trace " + trace).status, 0);
  std::set<int> ranks;
  const auto doc = nlohmann::json::parse(read_file(trace));
  for (const auto& row : doc["records"]) ranks.insert(row[0].get<int>());
  EXPECT_EQ(ranks, (std::set<int>{0, 4, 5}));
  const CliRun bad = run_tandem("simulate gpt2-124m-dp8 --trace-ranks 0-8 --trace " + trace);
  EXPECT_EQ(bad.status, 2);
  EXPECT_NE(bad.err.find("--trace-ranks"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("not one of the 8 ranks"), std::string::npos) << bad.err;
}

// localhost-calibrated under another name, in another folder: still this machine's cores.
TEST(TraceOutputsCli, RunTakesACalibratedCpuClusterUnderAnyNameAndCompareWarnsOfTheNames) {
  const fs::path dir = cli_test::fresh_dir("tandem-trace-outputs", "renamed");
  std::string cluster = test::bundled_text("platforms/clusters/localhost-calibrated.yaml");
  cluster.replace(cluster.find("\"localhost-calibrated\""), 22, "my-workstation");
  cluster.replace(cluster.find("\"../devices/localhost-calibrated.yaml\""), 38,
                  bundled_dir("platforms/devices/localhost-calibrated.yaml"));
  std::ofstream(dir / "my-workstation.yaml") << cluster;
  std::string scenario = test::bundled_text("scenarios/mlp-localhost.yaml");
  scenario.replace(scenario.find("name: mlp-localhost"), 19, "name: mlp-on-my-workstation");
  scenario.replace(scenario.find("cluster: localhost"), 18, "cluster: my-workstation.yaml");
  std::ofstream(dir / "mlp.yaml") << scenario;

  const std::string measured = (dir / "meas.json").string(), predicted = (dir / "pred.json").string();
  const CliRun run = run_tandem("run " + (dir / "mlp.yaml").string() + " --backend cpu --iterations 2 --trace " + measured);
  ASSERT_EQ(run.status, 0) << run.err;
  ASSERT_EQ(run_tandem("simulate mlp-localhost --trace " + predicted).status, 0);
  const CliRun compare = run_tandem("compare " + predicted + " " + measured);
  EXPECT_EQ(compare.status, 0) << compare.err;
  EXPECT_NE(compare.out.find("warning     the traces name different scenarios"), std::string::npos) << compare.out;
}

// The plan rides in the trace: each rank's stage, replica, layers and batch share (here the
// proportional pipeline over H100, A100 and V100 nodes), shown by the report's plan section.
TEST(TraceOutputsCli, TracesCarryEachRanksRoleAndTheReportDrawsThePlanFromThem) {
  const fs::path dir = cli_test::fresh_dir("tandem-trace-outputs", "roles");
  const std::string trace = (dir / "pred.json").string(), prediction = (dir / "pred-summary.json").string(),
                    report = (dir / "report.html").string();
  // One rank's records per stage (the ranks' list stays whole): a small trace and report.
  const CliRun run = run_tandem("simulate mixed-3d-proportional --iterations 1 --trace-ranks 0,64,128 --trace " + trace +
                                " --json " + prediction);
  ASSERT_EQ(run.status, 0) << run.err;
  const auto doc = nlohmann::json::parse(read_file(trace));
  ASSERT_EQ(doc["ranks"].size(), 192u);
  std::set<int> stages;
  int layers = 0;
  long long sequences = 0;
  for (int rank = 0; rank < 192; ++rank) {
    const auto& r = doc["ranks"][rank];
    stages.insert(r["stage"].get<int>());
    if (rank % 8 == 0 && r["replica"] == 0) layers += r["layers"].get<int>();  // one tensor rank per stage
    if (r["stage"] == 0 && rank % 8 == 0) sequences += r["sequences"].get<long long>();
  }
  EXPECT_EQ(stages, (std::set<int>{0, 1, 2}));
  EXPECT_EQ(layers, 40) << "gpt3-13b's layers over the three stages";
  EXPECT_EQ(sequences, 64) << "the replicas' shares add up to the global batch";

  const CliRun drawn = run_tandem("report --predicted-trace " + trace + " --prediction " + prediction + " -o " + report);
  ASSERT_EQ(drawn.status, 0) << drawn.err;
  const std::string html = read_file(report);
  const std::size_t plan = html.find("<section data-section=\"plan\">");
  ASSERT_NE(plan, std::string::npos);
  const std::string section = html.substr(plan, html.find("</section>", plan) - plan);
  for (const char* words : {"3 pipeline stages", "H100", "A100", "V100", "Collectives per device group"})
    EXPECT_NE(section.find(words), std::string::npos) << words;
}

// A straggler the simulator was told of (rank 3 computes 1.3x as long) is found again in its
// trace by the anomaly analysis that compare and the report run on measured traces.
TEST(TraceOutputsCli, CompareAndTheReportNameASimulatedStraggler) {
  const fs::path dir = cli_test::fresh_dir("tandem-trace-outputs", "straggler");
  const std::string trace = (dir / "pred.json").string(), report = (dir / "report.html").string();
  ASSERT_EQ(run_tandem("simulate goodput-gpt2-124m-straggler --trace " + trace).status, 0);
  const CliRun compare = run_tandem("compare " + trace + " " + trace);
  ASSERT_EQ(compare.status, 0) << compare.err;
  EXPECT_NE(compare.out.find("straggler: rank 3 computes"), std::string::npos) << compare.out;
  EXPECT_EQ(compare.out.find("straggler: rank 0"), std::string::npos) << compare.out;
  ASSERT_EQ(run_tandem("report --measured-trace " + trace + " -o " + report).status, 0);
  const std::string html = read_file(report);
  EXPECT_NE(html.find("Stragglers and slow ops: measured"), std::string::npos);
  EXPECT_NE(html.find("<td>rank 3</td><td>all compute</td>"), std::string::npos);
}

TEST(TraceOutputsCli, RunRefusesAGpuClusterOnTheCpuBackend) {
  const CliRun run = run_tandem("run gpt2-124m-dp8 --backend cpu --iterations 1");
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.err.find("one node of cpu devices"), std::string::npos) << run.err;
}

}  // namespace
}  // namespace tandem
