// The search weighs local SGD against synchronous data parallelism (issue 16): on 64 H100 whose
// nodes talk over 100 Gb/s Ethernet, GPT-2 1.5B with one sequence per GPU spends most of a
// synchronous step exchanging gradients, so a plan that averages every 8 steps ranks first; plans
// with ZeRO, which shard the optimizer state local SGD keeps whole, are never given a period.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <string>

#include "tests/cli/cli_test_support.hpp"

namespace tandem {
namespace {

constexpr const char* kScenario = R"(name: search-local-sgd
model: gpt2-1.5b
cluster: h100-64-ethernet-100g
training: {global_batch_size: 64, micro_batch_size: 1, seq_length: 1024}
strategy: {type: hybrid, data_parallel_size: 64}
search:
  tensor_model_parallel_size: [1]
  pipeline_model_parallel_size: [1]
  micro_batch_size: [1]
  zero_stage: [0, 1]
  recompute_granularity: [none]
  local_sgd_steps: [1, 8]
  top_k: 3
)";

TEST(SearchLocalSgdCli, OnASlowNetworkLocalSgdRanksAboveSynchronousDataParallelism) {
  const auto dir = cli_test::fresh_dir("tandem-search-local-sgd", "cli");
  const std::string scenario = (dir / "search-local-sgd.yaml").string();
  std::ofstream(scenario) << kScenario;
  const cli_test::CliRun run = cli_test::run_tandem("search " + scenario + " --workers 2 --json -");
  ASSERT_EQ(run.status, 0) << run.err;
  const nlohmann::json report = nlohmann::json::parse(run.out);
  ASSERT_EQ(report["ranked"].size(), 3u);  // zero 0 with and without local SGD, zero 1 without
  const auto& best = report["ranked"][0];
  EXPECT_EQ(best["knobs"]["local_sgd_steps"].get<int>(), 8) << best["candidate"];
  EXPECT_EQ(best["knobs"]["zero_stage"].get<int>(), 0);
  for (const auto& r : report["ranked"])
    if (r["knobs"]["zero_stage"].get<int>() != 0) EXPECT_EQ(r["knobs"]["local_sgd_steps"].get<int>(), 1) << r["candidate"];
}

// Hierarchical local SGD's block size is a knob too: blocks of a node's 8 GPUs reduce over NVLink
// every step and average across nodes every H steps; on this network a block costs little over
// plain local SGD (its reduction stays inside the node) and far less than synchronous steps.
TEST(SearchLocalSgdCli, TheSearchWeighsHierarchicalBlocksOfReplicas) {
  const auto dir = cli_test::fresh_dir("tandem-search-local-sgd", "blocks");
  const std::string scenario = (dir / "search-local-sgd.yaml").string();
  std::string text = kScenario;
  text.replace(text.find("zero_stage: [0, 1]"), 18, "zero_stage: [0]");
  text.replace(text.find("local_sgd_steps: [1, 8]"), 23, "local_sgd_steps: [1, 8]\n  local_sgd_group_size: [1, 8, 64]");
  std::ofstream(scenario) << text;
  const cli_test::CliRun run = cli_test::run_tandem("search " + scenario + " --workers 2 --json -");
  ASSERT_EQ(run.status, 0) << run.err;
  const nlohmann::json report = nlohmann::json::parse(run.out);
  ASSERT_EQ(report["ranked"].size(), 3u) << report["ranked"];  // synchronous, local SGD, blocks of 8
  double synchronous = 0, plain = 0, blocks = 0;
  for (const auto& r : report["ranked"]) {
    const int h = r["knobs"]["local_sgd_steps"], g = r["knobs"]["local_sgd_group_size"];
    const double t = r["prediction"]["iteration_time_s"];
    if (h == 1) {
      synchronous = t;
    } else if (g == 1) {
      plain = t;
    } else {
      blocks = t;
      EXPECT_EQ(g, 8) << r["candidate"];
    }
  }
  EXPECT_GT(blocks, plain);
  EXPECT_LT(blocks, 1.05 * plain);
  EXPECT_LT(blocks, synchronous);
  // A block of all 64 replicas is synchronous data parallelism: not a plan of its own.
  EXPECT_EQ(report["dropped"]["local SGD blocks of every replica (synchronous data parallelism)"], 1) << report["dropped"];
}

}  // namespace
}  // namespace tandem
