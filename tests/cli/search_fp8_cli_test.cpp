// The search weighs FP8 GEMMs (training.fp8, issue 19) like any other knob: on H100 nodes a GEMM-bound
// GPT ranks `fp8: hybrid` first; on A100 nodes, which have no FP8 tensor cores, the FP8 plans
// are dropped before anything is simulated, with their reason counted.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <string>

#include "tests/cli/cli_test_support.hpp"

namespace tandem {
namespace {

std::string scenario_on(const std::string& cluster) {
  return "name: search-fp8\n"
         "model: gpt3-1.3b\n"
         "cluster: " + cluster + "\n"
         "training: {global_batch_size: 8, micro_batch_size: 1, seq_length: 2048}\n"
         "strategy: {type: hybrid, data_parallel_size: 8}\n"
         "search:\n"
         "  devices: [8]\n"
         "  tensor_model_parallel_size: [1]\n"
         "  pipeline_model_parallel_size: [1]\n"
         "  micro_batch_size: [1]\n"
         "  zero_stage: [1]\n"
         "  recompute_granularity: [none]\n"
         "  fp8: [none, hybrid]\n"
         "  top_k: 2\n";
}

nlohmann::json search(const std::string& cluster) {
  const auto dir = cli_test::fresh_dir("tandem-search-fp8", cluster);
  const std::string scenario = (dir / "search-fp8.yaml").string();
  std::ofstream(scenario) << scenario_on(cluster);
  const cli_test::CliRun run = cli_test::run_tandem("search " + scenario + " --workers 2 --json -");
  EXPECT_EQ(run.status, 0) << run.err;
  return run.status == 0 ? nlohmann::json::parse(run.out) : nlohmann::json::object();
}

TEST(SearchFp8Cli, OnH100TheFp8PlanRanksFirst) {
  const nlohmann::json report = search("dgx-h100");
  ASSERT_EQ(report["ranked"].size(), 2u);
  EXPECT_EQ(report["ranked"][0]["knobs"]["fp8"], "hybrid") << report["ranked"][0]["candidate"];
  EXPECT_EQ(report["ranked"][1]["knobs"]["fp8"], "none");
  EXPECT_LT(report["ranked"][0]["objective"].get<double>(), 0.95 * report["ranked"][1]["objective"].get<double>());
}

TEST(SearchFp8Cli, OnA100TheFp8PlansAreDroppedWithTheirReason) {
  const nlohmann::json report = search("dgx-a100");
  ASSERT_EQ(report["ranked"].size(), 1u);
  EXPECT_EQ(report["ranked"][0]["knobs"]["fp8"], "none");
  EXPECT_EQ(report["dropped"]["FP8 on devices without FP8 tensor cores"], 1) << report["dropped"];
}

}  // namespace
}  // namespace tandem
