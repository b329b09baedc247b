// Expert parallelism in the search and at the command line (issue 19): Mixtral 8x7B on 64 H100
// fits only with its experts split over replicas, and the search's winner does; a bad expert
// setting is an input error at its field.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <string>

#include "tests/cli/cli_test_support.hpp"

namespace tandem {
namespace {

TEST(SearchExpertParallelCli, MixtralFitsOnlyWithItsExpertsSplitAndTheWinnerSplitsThem) {
  const cli_test::CliRun run = cli_test::run_tandem("search search-mixtral-8x7b-h100-64 --workers 2 --json -");
  ASSERT_EQ(run.status, 0) << run.err;
  const nlohmann::json report = nlohmann::json::parse(run.out);
  ASSERT_FALSE(report["ranked"].empty());
  for (const auto& plan : report["ranked"]) EXPECT_GT(plan["knobs"]["expert_model_parallel_size"].get<int>(), 1);
  EXPECT_EQ(report["ranked"][0]["knobs"]["expert_model_parallel_size"], 8) << report["ranked"][0]["candidate"];
  // Every expert on every GPU: over 80 GB at any pipeline depth searched (analytic bound).
  EXPECT_GE(report["dropped"]["exceeds memory (analytic lower bound, with headroom)"].get<int>(), 3) << report["dropped"];
  // 16 replicas cannot share out 8 experts.
  EXPECT_EQ(report["dropped"]["rejected by the strategy (expert_model_parallel_size)"].get<int>(), 2);
}

std::string mixtral_with(const std::string& strategy_lines, const std::string& model_lines = "") {
  return "name: moe-bad\n"
         "model:\n"
         "  preset: mixtral-8x7b\n" + model_lines +
         "cluster: dgx-h100\n"
         "training: {global_batch_size: 64, micro_batch_size: 1, seq_length: 4096}\n"
         "strategy:\n"
         "  type: hybrid\n" + strategy_lines;
}

cli_test::CliRun simulate(const std::string& name, const std::string& text) {
  return cli_test::run_tandem("simulate " + cli_test::write_in_fresh_dir("tandem-moe-bad", name, "moe-bad.yaml", text));
}

void expect_field_error(const cli_test::CliRun& run, const std::string& field, const std::string& words) {
  EXPECT_EQ(run.status, 2) << run.err;
  EXPECT_NE(run.err.find("moe-bad.yaml"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find(field), std::string::npos) << run.err;
  EXPECT_NE(run.err.find(words), std::string::npos) << run.err;
}

TEST(SearchExpertParallelCli, BadExpertSettingsAreInputErrorsAtTheirField) {
  expect_field_error(simulate("divide", mixtral_with("  data_parallel_size: 6\n  expert_model_parallel_size: 4\n")),
                     "strategy.expert_model_parallel_size", "does not divide data_parallel_size");
  expect_field_error(simulate("experts", mixtral_with("  data_parallel_size: 16\n  expert_model_parallel_size: 16\n")),
                     "strategy.expert_model_parallel_size", "does not divide the model's 8 experts");
  expect_field_error(simulate("zero", mixtral_with("  data_parallel_size: 8\n  expert_model_parallel_size: 8\n  zero_stage: 1\n")),
                     "strategy.zero_stage", "ZeRO with experts is not built yet");
  expect_field_error(simulate("dense", "name: moe-bad\nmodel: gpt3-1.3b\ncluster: dgx-h100\n"
                                       "training: {global_batch_size: 8, micro_batch_size: 1}\n"
                                       "strategy: {type: hybrid, data_parallel_size: 8, expert_model_parallel_size: 2}\n"),
                     "strategy.expert_model_parallel_size", "needs a model with experts");
  expect_field_error(simulate("topk", mixtral_with("  data_parallel_size: 8\n", "  moe_router_topk: 9\n")),
                     "model.moe_router_topk", "exceeds num_moe_experts");
}

TEST(SearchExpertParallelCli, DroplessRoutingIsPricedAtFullBuffersAndSaysSo) {
  // Mixtral (8 experts, top-2) without a capacity factor: every expert's buffer holds all tokens,
  // 4x a balanced run's expert work; the output says so, and not once a capacity is set.
  const std::string plan = "  pipeline_model_parallel_size: 8\n  data_parallel_size: 8\n  expert_model_parallel_size: 8\n";
  const cli_test::CliRun dropless = simulate("dropless", mixtral_with(plan) + "");
  ASSERT_EQ(dropless.status, 0) << dropless.err;
  EXPECT_NE(dropless.out.find("caveat      dropless routing"), std::string::npos) << dropless.out;
  EXPECT_NE(dropless.out.find("4x a balanced run's expert work"), std::string::npos) << dropless.out;
  const cli_test::CliRun capped = simulate("capped", mixtral_with(plan, "  moe_expert_capacity_factor: 1.25\n"));
  ASSERT_EQ(capped.status, 0) << capped.err;
  EXPECT_EQ(capped.out.find("caveat"), std::string::npos) << capped.out;
}

TEST(SearchExpertParallelCli, TheBundledMixtralPlanSimulatesAndFits) {
  const cli_test::CliRun run = cli_test::run_tandem("simulate mixtral-8x7b-h100-ep8");
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_NE(run.out.find("ep=8"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("fits in memory"), std::string::npos) << run.out;
  // Expert groups of 8 replicas (a node each): the first group is simulated, the other mirrored.
  EXPECT_NE(run.out.find("replica folding: 8 of 16 replicas simulated"), std::string::npos) << run.out;
}

}  // namespace
}  // namespace tandem
