// `tandem run SCENARIO --backend cpu` end to end: the real binary, its exit status, its outputs.
#include <gtest/gtest.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include "tests/cli/cli_test_support.hpp"

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "analysis/trace.hpp"

namespace tandem {
namespace {

namespace fs = std::filesystem;

using cli_test::CliRun;
using cli_test::run_tandem;

fs::path test_dir() {
  const fs::path dir = fs::temp_directory_path() / ("tandem-run-cli-test-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir;
}

TEST(RunCli, TrainsGptTinyPrintingLossAndThroughputAndWritesTraceAndSummary) {
  const std::string trace = (test_dir() / "trace.json").string();
  const std::string summary = (test_dir() / "summary.json").string();
  fs::remove(trace);
  fs::remove(summary);
  const CliRun run = run_tandem("run gpt-tiny-localhost --backend cpu --iterations 3 --trace " + trace +
                                " --json " + summary);
  ASSERT_EQ(run.status, 0) << run.err;
  for (const char* needle : {"iter    0", "iter    2", "loss", "tokens/s", "peak memory"})
    EXPECT_NE(run.out.find(needle), std::string::npos) << needle << "\n" << run.out;

  const tandem::Trace t = tandem::read_trace_json(trace);
  EXPECT_EQ(t.source, "cpu");
  EXPECT_EQ(t.scenario, "gpt-tiny-localhost");
  EXPECT_GT(t.records.size(), 100u);

  std::ifstream in(summary);
  const nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_EQ(j.at("backend"), "cpu");
  EXPECT_EQ(j.at("world_size"), 2);
  ASSERT_EQ(j.at("iterations").size(), 3u);
  EXPECT_GT(j.at("iterations")[0].at("loss").get<double>(), 5.0);
  EXPECT_GT(j.at("tokens_per_s").get<double>(), 0);
  EXPECT_EQ(j.at("ranks").size(), 2u);
}

TEST(RunCli, JsonToStdoutIsTheOnlyOutput) {
  const CliRun run = run_tandem("run mlp-localhost --iterations 1 --json -");
  ASSERT_EQ(run.status, 0) << run.err;
  const nlohmann::json j = nlohmann::json::parse(run.out);
  EXPECT_EQ(j.at("scenario"), "mlp-localhost");
}

TEST(RunCli, RefusesAClusterOtherThanLocalhost) {
  const CliRun run = run_tandem("run gpt2-124m-dp8 --backend cpu --iterations 1");
  EXPECT_EQ(run.status, 2) << run.out;
  EXPECT_NE(run.err.find("localhost"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("cluster"), std::string::npos) << run.err;
}

TEST(RunCli, CheckpointThenResumeContinuesTheIterationsAndRefusesADamagedFile) {
  const std::string ck = (test_dir() / "cli.ck").string();
  ASSERT_EQ(run_tandem("run gpt-tiny-localhost --iterations 2 --checkpoint " + ck).status, 0);
  const CliRun resumed = run_tandem("run gpt-tiny-localhost --iterations 1 --resume " + ck);
  ASSERT_EQ(resumed.status, 0) << resumed.err;
  EXPECT_NE(resumed.out.find("iter    2"), std::string::npos) << resumed.out;

  std::fstream f(ck, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(200);
  f.put('\x7f');
  f.close();
  const CliRun damaged = run_tandem("run gpt-tiny-localhost --iterations 1 --resume " + ck);
  EXPECT_EQ(damaged.status, 2);
  EXPECT_NE(damaged.err.find(ck), std::string::npos) << damaged.err;
}

TEST(RunCli, RefusesAnUnknownBackend) {
  const CliRun run = run_tandem("run gpt-tiny-localhost --backend cuda");
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.err.find("cuda"), std::string::npos) << run.err;
}

}  // namespace
}  // namespace tandem
