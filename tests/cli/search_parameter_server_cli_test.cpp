// The search weighs parameter servers (issue 16): plans that give some of the devices to servers
// (data parallelism alone), synchronous or stale, ranked by their simulated steps beside the
// all-reduce. On 16 H100 over 100 Gb/s Ethernet the hierarchical all-reduce wins (servers take
// every worker's whole gradient through their NICs), and a stale exchange beats a synchronous one.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <string>

#include "tests/cli/cli_test_support.hpp"

namespace tandem {
namespace {

constexpr const char* kScenario = R"(name: search-ps
model: gpt2-1.5b
cluster: h100-64-ethernet-100g
training: {global_batch_size: 16, micro_batch_size: 1, seq_length: 1024}
strategy: {type: hybrid, data_parallel_size: 16}
search:
  devices: [16]
  tensor_model_parallel_size: [1]
  pipeline_model_parallel_size: [1]
  micro_batch_size: [1]
  zero_stage: [0]
  recompute_granularity: [none]
  parameter_servers: [0, 8]
  parameter_server_staleness: [0, 1]
  top_k: 3
)";

TEST(SearchParameterServerCli, ServerPlansAreRankedBesideTheAllReduce) {
  const auto dir = cli_test::fresh_dir("tandem-search-ps", "cli");
  const std::string scenario = (dir / "search-ps.yaml").string();
  std::ofstream(scenario) << kScenario;
  const cli_test::CliRun run = cli_test::run_tandem("search " + scenario + " --workers 2 --json -");
  ASSERT_EQ(run.status, 0) << run.err;
  const nlohmann::json report = nlohmann::json::parse(run.out);
  ASSERT_EQ(report["ranked"].size(), 3u) << report["ranked"];  // all-reduce; 8 + 8 synchronous and stale
  const auto& best = report["ranked"][0];
  EXPECT_EQ(best["knobs"]["parameter_servers"].get<int>(), 0) << best["candidate"];
  EXPECT_EQ(best["knobs"]["data_parallel_size"].get<int>(), 16);
  for (int i : {1, 2}) {
    const auto& r = report["ranked"][i];
    EXPECT_EQ(r["knobs"]["parameter_servers"].get<int>(), 8) << r["candidate"];
    EXPECT_EQ(r["knobs"]["data_parallel_size"].get<int>(), 8) << r["candidate"];
  }
  EXPECT_EQ(report["ranked"][1]["knobs"]["parameter_server_staleness"].get<int>(), 1) << report["ranked"];
  EXPECT_EQ(report["ranked"][2]["knobs"]["parameter_server_staleness"].get<int>(), 0) << report["ranked"];
}

TEST(SearchParameterServerCli, AServerCountOutOfRangeIsRefusedAtItsField) {
  const auto dir = cli_test::fresh_dir("tandem-search-ps", "bad");
  const std::string scenario = (dir / "search-ps.yaml").string();
  std::string text = kScenario;
  text.replace(text.find("parameter_server_staleness: [0, 1]"), 34, "parameter_server_staleness: [0, 65]");
  std::ofstream(scenario) << text;
  const cli_test::CliRun run = cli_test::run_tandem("search " + scenario);
  EXPECT_EQ(run.status, 2) << run.err;
  EXPECT_NE(run.err.find("search-ps.yaml:"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("parameter_server_staleness"), std::string::npos) << run.err;
}

// With the servers stepping the optimizer as a knob: the synchronous 8 + 8 plan comes both ways
// (the stale one only with summing servers), and the servers' optimizer step makes it no slower.
TEST(SearchParameterServerCli, ServersSteppingTheOptimizerAreAKnobOfSynchronousPlans) {
  const auto dir = cli_test::fresh_dir("tandem-search-ps", "server-optimizer");
  const std::string scenario = (dir / "search-ps.yaml").string();
  std::string text = kScenario;
  text.replace(text.find("  top_k: 3"), 10, "  parameter_server_optimizer: [false, true]\n  top_k: 4");
  std::ofstream(scenario) << text;
  const cli_test::CliRun run = cli_test::run_tandem("search " + scenario + " --workers 2 --json -");
  ASSERT_EQ(run.status, 0) << run.err;
  const nlohmann::json report = nlohmann::json::parse(run.out);
  ASSERT_EQ(report["ranked"].size(), 4u) << report["ranked"];
  double sums_s = 0, steps_s = 0;
  for (const auto& r : report["ranked"]) {
    const auto& k = r["knobs"];
    if (k["parameter_servers"].get<int>() == 0) continue;
    if (k["parameter_server_optimizer"].get<bool>()) {
      EXPECT_EQ(k["parameter_server_staleness"].get<int>(), 0) << r["candidate"];
      steps_s = r["prediction"]["iteration_time_s"].get<double>();
    } else if (k["parameter_server_staleness"].get<int>() == 0) {
      sums_s = r["prediction"]["iteration_time_s"].get<double>();
    }
  }
  ASSERT_GT(sums_s, 0);
  ASSERT_GT(steps_s, 0);
  EXPECT_LE(steps_s, sums_s);
}

}  // namespace
}  // namespace tandem
