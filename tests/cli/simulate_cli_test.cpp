// `tandem simulate` end to end: the real binary, its exit status, its outputs.
#include <gtest/gtest.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include "tests/cli/cli_test_support.hpp"

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace tandem {
namespace {

namespace fs = std::filesystem;

using cli_test::CliRun;
using cli_test::run_tandem;

std::string write_temp(const std::string& name, const std::string& text) {
  const fs::path path = fs::temp_directory_path() / ("tandem-cli-test-" + std::to_string(::getpid())) / name;
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
  return path.string();
}

TEST(SimulateCli, PrintsThePredictionOfABundledScenario) {
  const CliRun run = run_tandem("simulate gpt2-124m-dp8");
  ASSERT_EQ(run.status, 0) << run.err;
  for (const char* needle : {"iteration", "tokens/s", "MFU", "exposed comm", "idle", "memory", "fits in memory", "energy"})
    EXPECT_NE(run.out.find(needle), std::string::npos) << needle << "\n" << run.out;
}

// What the prediction rests on: each device profile's basis, and what times the collectives (on a
// DGX H100 node the NCCL model, its mid sizes from the named measured sweep), in text and JSON.
TEST(SimulateCli, SaysWhatItsProfilesAndCollectivesRestOn) {
  const CliRun run = run_tandem("simulate gpt2-124m-dp8 --iterations 1");
  ASSERT_EQ(run.status, 0) << run.err;
  for (const char* needle : {"profiles:", "collectives:", "NCCL model (hopper)", "ND_H100_v5_results.md"})
    EXPECT_NE(run.out.find(needle), std::string::npos) << needle << "\n" << run.out;
  const CliRun json = run_tandem("simulate gpt2-124m-dp8 --iterations 1 --json -");
  ASSERT_EQ(json.status, 0) << json.err;
  const auto basis = nlohmann::json::parse(json.out).at("collectives_basis");
  ASSERT_EQ(basis.size(), 1u);
  EXPECT_NE(basis[0].get<std::string>().find("NCCL model"), std::string::npos);
}

TEST(SimulateCli, JsonAndPerfettoTraceAreWritten) {
  const fs::path dir = fs::temp_directory_path() / ("tandem-cli-test-" + std::to_string(::getpid()));
  fs::create_directories(dir);  // on its own: under ctest no other test made it first
  const std::string json_path = (dir / "prediction.json").string();
  const std::string trace_path = (dir / "timeline.json").string();
  const CliRun run = run_tandem("simulate gpt2-124m-dp8 --iterations 1 --json " + json_path + " --chrome-trace " + trace_path);
  ASSERT_EQ(run.status, 0) << run.err;
  const auto prediction = nlohmann::json::parse(std::ifstream(json_path));
  EXPECT_GT(prediction["iteration_time_s"].get<double>(), 0);
  EXPECT_GT(prediction["mfu"].get<double>(), 0.05);
  EXPECT_LT(prediction["mfu"].get<double>(), 1.0);
  EXPECT_EQ(prediction["devices"], 8);
  const auto trace = nlohmann::json::parse(std::ifstream(trace_path));
  std::set<int> ranks;
  std::set<std::string> kinds;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "X") continue;
    ranks.insert(e["pid"].get<int>());
    kinds.insert(e["cat"].get<std::string>());
    EXPECT_GE(e["dur"].get<double>(), 0);
  }
  EXPECT_EQ(ranks.size(), 8u);
  for (const char* kind : {"gemm", "attention", "all_reduce", "optimizer"}) EXPECT_TRUE(kinds.count(kind)) << kind;
}

TEST(SimulateCli, JsonToStdoutIsMachineReadable) {
  const CliRun run = run_tandem("simulate gpt2-124m-dp8 --iterations 1 --json -");
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_NO_THROW(nlohmann::json::parse(run.out));
}

TEST(SimulateCli, BadInputGivesOneLineAndStatusTwo) {
  const std::string bad = write_temp("bad-batch.yaml",
                                     "name: bad\nmodel: gpt2-124m\ncluster: tiny-h100\ntraining:\n"
                                     "  global_batch_size: 60\n  micro_batch_size: 8\n  seq_length: 1024\n"
                                     "strategy:\n  type: data_parallel\n  data_parallel_size: 8\n");
  const CliRun run = run_tandem("simulate " + bad);
  EXPECT_EQ(run.status, 2);
  EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
  EXPECT_NE(run.err.find(bad + ":5:"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("training.global_batch_size"), std::string::npos) << run.err;
}

TEST(SimulateCli, MissingScenarioGivesStatusTwo) {
  const CliRun run = run_tandem("simulate no-such-scenario");
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.err.find("no-such-scenario"), std::string::npos);
}

TEST(SimulateCli, UnknownOptionGivesStatusTwo) {
  EXPECT_EQ(run_tandem("simulate gpt2-124m-dp8 --no-such-flag").status, 2);
  EXPECT_EQ(run_tandem("simulate gpt2-124m-dp8 --algorithm zigzag").status, 2);
}

}  // namespace
}  // namespace tandem
