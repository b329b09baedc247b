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
  // 16 replicas cannot share out 8 experts: twice per tensor-parallel setting that fits (tp 1; tp 2
  // with sequence parallelism).
  EXPECT_EQ(report["dropped"]["rejected by the strategy (expert_model_parallel_size)"].get<int>(), 4);
  // Expert-tensor parallelism is in the space and simulated: plans with tp 2 rank (behind tp 1 here,
  // their all-to-all among twice as many GPUs).
  bool expert_tensor_parallel = false;
  for (const auto& plan : report["ranked"])
    expert_tensor_parallel |= plan["knobs"]["tensor_model_parallel_size"].get<int>() == 2;
  EXPECT_TRUE(expert_tensor_parallel) << report["ranked"];
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

cli_test::CliRun simulate(const std::string& name, const std::string& text, const std::string& args = "") {
  return cli_test::run_tandem("simulate " + cli_test::write_in_fresh_dir("tandem-moe-bad", name, "moe-bad.yaml", text) + args);
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
  expect_field_error(simulate("local", mixtral_with("  data_parallel_size: 8\n  expert_model_parallel_size: 4\n"
                                                    "  local_sgd_steps: 2\n  local_sgd_group_size: 2\n")),
                     "strategy.local_sgd_group_size", "hierarchical local SGD (local_sgd_group_size > 1) with experts is not built yet");
  expect_field_error(simulate("dense", "name: moe-bad\nmodel: gpt3-1.3b\ncluster: dgx-h100\n"
                                       "training: {global_batch_size: 8, micro_batch_size: 1}\n"
                                       "strategy: {type: hybrid, data_parallel_size: 8, expert_model_parallel_size: 2}\n"),
                     "strategy.expert_model_parallel_size", "needs a model with experts");
  expect_field_error(simulate("topk", mixtral_with("  data_parallel_size: 8\n", "  moe_router_topk: 9\n")),
                     "model.moe_router_topk", "exceeds num_moe_experts");
}

// At a 32k context with a global batch of 32 sequences, data parallelism alone leaves each
// pipeline two micro-batches (most of the step idle); context parallelism with experts splits the
// sequences and wins, and the winner keeps experts split too.
TEST(SearchExpertParallelCli, AtALongContextContextParallelismWithExpertsWins) {
  const cli_test::CliRun run = cli_test::run_tandem("search search-mixtral-8x7b-32k-cp --workers 2 --json -");
  ASSERT_EQ(run.status, 0) << run.err;
  const nlohmann::json report = nlohmann::json::parse(run.out);
  ASSERT_FALSE(report["ranked"].empty());
  const nlohmann::json& best = report["ranked"][0];
  EXPECT_GT(best["knobs"]["context_parallel_size"].get<int>(), 1) << best["candidate"];
  EXPECT_GT(best["knobs"]["expert_model_parallel_size"].get<int>(), 1) << best["candidate"];
  // Better than the baseline without context parallelism by more than a third.
  const cli_test::CliRun baseline = cli_test::run_tandem("simulate search-mixtral-8x7b-32k-cp --json -");
  ASSERT_EQ(baseline.status, 0) << baseline.err;
  const double baseline_s = nlohmann::json::parse(baseline.out)["iteration_time_s"].get<double>();
  EXPECT_LT(best["prediction"]["iteration_time_s"].get<double>(), baseline_s * 2 / 3) << best["candidate"];
}

TEST(SearchExpertParallelCli, DroplessRoutingIsPricedAtTheBusiestExpertsLoadAndSaysSo) {
  // Mixtral (8 experts, top-2) without a capacity factor: a dropless dispatcher moves and computes
  // the tokens routed, so the simulator prices each expert at the busiest one's expected load, a
  // balanced router's statistical floor (1,064 of 4,096 tokens, 1.039x the balanced 1,024), and
  // says so; with a measured imbalance of 1.25 it prices exactly what a capacity factor of 1.25
  // pads to. A capacity factor is no estimate: no caveat.
  const std::string plan = "  pipeline_model_parallel_size: 8\n  data_parallel_size: 8\n  expert_model_parallel_size: 8\n";
  const cli_test::CliRun dropless = simulate("dropless", mixtral_with(plan) + "", " --json -");
  ASSERT_EQ(dropless.status, 0) << dropless.err;
  const nlohmann::json floor = nlohmann::json::parse(dropless.out);
  ASSERT_EQ(floor["caveats"].size(), 1u) << floor["caveats"];
  EXPECT_NE(floor["caveats"][0].get<std::string>().find("1064 of a micro-batch's 4096 tokens per expert (1.039x"),
            std::string::npos) << floor["caveats"];
  const cli_test::CliRun measured =
      simulate("measured", mixtral_with(plan, "  moe_router_load_imbalance: 1.25\n"), " --json -");
  const cli_test::CliRun capped = simulate("capped", mixtral_with(plan, "  moe_expert_capacity_factor: 1.25\n"), " --json -");
  ASSERT_EQ(measured.status, 0) << measured.err;
  ASSERT_EQ(capped.status, 0) << capped.err;
  const nlohmann::json at_measured = nlohmann::json::parse(measured.out), at_capacity = nlohmann::json::parse(capped.out);
  EXPECT_TRUE(at_capacity["caveats"].empty()) << at_capacity["caveats"];
  EXPECT_DOUBLE_EQ(at_measured["iteration_time_s"].get<double>(), at_capacity["iteration_time_s"].get<double>());
  EXPECT_LT(floor["iteration_time_s"].get<double>(), at_capacity["iteration_time_s"].get<double>());
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
