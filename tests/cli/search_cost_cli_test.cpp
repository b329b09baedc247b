// `tandem search --objective cost` end to end, simulated: a user who asks for cost sees plans on
// fewer or cheaper devices ranked first, not the time ranking. A small GPT whose data-parallel
// speed-up from 8 to 16 GPUs is far from 2x: the fastest plan uses an H100 and an A100 node, the
// cheapest a single node of the cheaper A100s (platforms/devices: price_per_hour_usd).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <string>
#include <vector>

#include "tests/cli/cli_test_support.hpp"

namespace tandem {
namespace {

using cli_test::CliRun;
using cli_test::run_tandem;

constexpr const char* kScenario = R"(name: search-cost-small
description: small GPT on one H100 and one A100 node of the mixed cluster
model: {type: transformer, name: gpt-small-4l, num_layers: 4, hidden_size: 512, num_attention_heads: 8,
        vocab_size: 8192, seq_length: 256}
cluster: mixed
training: {global_batch_size: 32, micro_batch_size: 1}
strategy: {type: hybrid, data_parallel_size: 8}
search:
  nodes: {h100: [0, 1], a100: [0, 1], v100: 0}
  tensor_model_parallel_size: [1]
  pipeline_model_parallel_size: [1]
  micro_batch_size: [1]
  zero_stage: [0]
  recompute_granularity: [none]
  top_k: 4
)";

nlohmann::json search_report(const std::string& scenario, const char* objective) {
  const CliRun run = run_tandem("search " + scenario + " --workers 2 --objective " + objective + " --json -");
  EXPECT_EQ(run.status, 0) << run.err;
  return nlohmann::json::parse(run.out);
}

std::vector<std::string> ranking(const nlohmann::json& report) {
  std::vector<std::string> keys;
  for (const auto& r : report["ranked"]) keys.push_back(r["candidate"].get<std::string>());
  return keys;
}

int devices_of(const nlohmann::json& ranked) {
  int nodes = 0;
  for (const auto& n : ranked["knobs"]["nodes_per_group"]) nodes += n.get<int>();
  return 8 * nodes;  // 8 GPUs a node in every group of the mixed cluster
}

TEST(SearchCostCli, CostRanksCheaperOrFewerDevicesFirstNotTheTimeRanking) {
  const auto dir = cli_test::fresh_dir("tandem-search-cost", "cli");
  const std::string scenario = (dir / "search-cost-small.yaml").string();
  std::ofstream(scenario) << kScenario;
  const nlohmann::json by_time = search_report(scenario, "time");
  const nlohmann::json by_cost = search_report(scenario, "cost");
  ASSERT_EQ(by_time["ranked"].size(), 4u);
  ASSERT_EQ(by_cost["ranked"].size(), 4u);
  EXPECT_NE(ranking(by_cost), ranking(by_time)) << "the cost ranking must not just repeat the time ranking";
  const auto& fastest = by_time["ranked"][0];
  const auto& cheapest = by_cost["ranked"][0];
  // The cheapest plan runs on fewer devices, or on devices that cost less per second.
  EXPECT_TRUE(devices_of(cheapest) < devices_of(fastest) ||
              cheapest["prediction"]["usd_per_s"].get<double>() < fastest["prediction"]["usd_per_s"].get<double>())
      << cheapest["candidate"] << " vs " << fastest["candidate"];
  // And it is cheaper per iteration than the fastest plan, though slower.
  const auto usd_per_iteration = [](const nlohmann::json& r) {
    return r["prediction"]["usd_per_s"].get<double>() * r["prediction"]["iteration_time_s"].get<double>();
  };
  EXPECT_LT(usd_per_iteration(cheapest), usd_per_iteration(fastest));
  EXPECT_GT(cheapest["prediction"]["iteration_time_s"].get<double>(), fastest["prediction"]["iteration_time_s"].get<double>());
  // Costs ranked ascending.
  for (std::size_t i = 1; i < by_cost["ranked"].size(); ++i)
    EXPECT_LE(by_cost["ranked"][i - 1]["objective"].get<double>(), by_cost["ranked"][i]["objective"].get<double>());
}

}  // namespace
}  // namespace tandem
