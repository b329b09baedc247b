// Searching how many nodes of each kind to use: the `nodes:` knob of a search section, the cost
// objective's default, and, with the simulator, plans for cost that use fewer or cheaper devices
// than the plans for time; the scenario a selected plan runs on is that part of the cluster.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "platforms/cluster_selection.hpp"
#include "scenarios/candidate_scenario.hpp"
#include "scenarios/search_evaluator.hpp"
#include "scenarios/search_spec.hpp"

namespace tandem {
namespace {

namespace fs = std::filesystem;

fs::path test_dir() {
  const fs::path dir = fs::temp_directory_path() / ("tandem-search-nodes-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir;
}

// 2 nodes x 4 H100 + 2 nodes x 4 A100 on one switch, and a small GPT to place on them.
std::string scenario_with(const std::string& search_lines) {
  const fs::path dir = test_dir();
  std::ofstream(dir / "tiny-mixed.yaml")
      << "name: tiny-mixed\n"
         "network: {topology: star, switch_latency_us: 0.5}\n"
         "node_groups:\n"
         "  - {name: h100, device: h100-sxm, nodes: 2, devices_per_node: 4,\n"
         "     intra_node: {fabric: nvswitch, bandwidth_gb_per_s: 450, latency_us: 1.0},\n"
         "     nic: {bandwidth_gbit_per_s: 400, latency_us: 2.0}}\n"
         "  - {name: a100, device: a100-sxm-80gb, nodes: 2, devices_per_node: 4,\n"
         "     intra_node: {fabric: nvswitch, bandwidth_gb_per_s: 300, latency_us: 1.0},\n"
         "     nic: {bandwidth_gbit_per_s: 200, latency_us: 2.0}}\n";
  const fs::path path = dir / "search.yaml";
  std::ofstream(path) << "name: s\n"                                                        // 1
                         "model: {type: transformer, name: gpt-4l, num_layers: 4, hidden_size: 512,\n"  // 2
                         "        num_attention_heads: 8, vocab_size: 8192, seq_length: 256}\n"         // 3
                         "cluster: tiny-mixed.yaml\n"                                       // 4
                         "training: {global_batch_size: 16}\n"                              // 5
                         "strategy: {type: hybrid, data_parallel_size: 16}\n"               // 6
                         "search:\n"                                                        // 7
                      << search_lines;
  return path.string();
}

TEST(SearchNodes, SectionListsCountsPerGroup) {
  const SearchScenario s = load_search_scenario(scenario_with("  nodes: {h100: [1, 2], a100: 0}\n"));
  EXPECT_EQ(s.space.nodes, (std::vector<std::vector<int>>{{1, 0}, {2, 0}}));
  const SearchScenario any = load_search_scenario(scenario_with("  nodes: any\n"));
  EXPECT_EQ(any.space.nodes.size(), 3u * 3u - 1u);
  const SearchScenario bounded = load_search_scenario(scenario_with("  nodes: {h100: {min: 1}, a100: 0}\n"));
  EXPECT_EQ(bounded.space.nodes, (std::vector<std::vector<int>>{{1, 0}, {2, 0}}));
}

TEST(SearchNodes, CostSearchesNodeSelectionsByDefaultTimeDoesNot) {
  EXPECT_TRUE(load_search_scenario(scenario_with("  objective: time\n")).space.nodes.empty());
  EXPECT_EQ(load_search_scenario(scenario_with("  objective: cost\n")).space.nodes.size(), 8u);
  EXPECT_EQ(load_search_scenario(scenario_with("  objective: time\n"), search::Objective::cost).space.nodes.size(), 8u)
      << "--objective cost on the command line counts as much as the file's";
  EXPECT_EQ(load_search_scenario(scenario_with("  objective: cost\n  devices: 8\n")).space.nodes.size(), 0u)
      << "devices given: the user chose";
}

TEST(SearchNodes, MistakesNameTheLine) {
  struct Case {
    const char* text;
    int line;
  };
  for (const Case& c : {Case{"  nodes: {v100: 1}\n", 8}, Case{"  nodes: {h100: 3}\n", 8}, Case{"  nodes: all\n", 8},
                        Case{"  devices: 8\n  nodes: {h100: 1}\n", 9}, Case{"  nodes: {h100: 0, a100: 0}\n", 8}}) {
    SCOPED_TRACE(c.text);
    try {
      load_search_scenario(scenario_with(c.text));
      ADD_FAILURE() << "expected an InputError";
    } catch (const InputError& e) {
      EXPECT_EQ(e.line(), c.line) << e.what();
      EXPECT_EQ(e.field().rfind("search.nodes", 0), 0u) << e.field();
    }
  }
}

TEST(SearchNodes, CandidateRunsOnItsSelection) {
  const SearchScenario spec = load_search_scenario(scenario_with("  nodes: any\n"));
  search::Candidate c;
  c.tp = 4, c.dp = 1, c.nodes = {0, 1};
  const Scenario s = scenario_for(spec.base, c);
  EXPECT_EQ(s.cluster.device_count(), 4);
  EXPECT_EQ(s.cluster.device_of(0).name, spec.base.cluster.groups[1].device.name);
  EXPECT_EQ(search::candidate_from_json(search::to_json(c)), c);
  EXPECT_NE(c.key().find("nodes=0/1"), std::string::npos) << c.key();
}

TEST(SearchNodes, CostPlansUseFewerOrCheaperDevicesThanTimePlans) {
  const std::string lines =
      "  nodes: any\n  tensor_model_parallel_size: [1, 4]\n  pipeline_model_parallel_size: [1, 2]\n"
      "  micro_batch_size: 1\n  zero_stage: 0\n  recompute_granularity: none\n  top_k: 3\n";
  search::Scored best[2];
  int i = 0;
  for (search::Objective objective : {search::Objective::time, search::Objective::cost}) {
    const SearchScenario spec = load_search_scenario(scenario_with(lines), objective);
    const search::Enumeration space = search::enumerate(spec.space, spec.base.cluster, spec.base.training);
    SimulationEvaluator evaluator(spec.base, 2);
    const search::SearchResult r = search::run_search(space, evaluator, spec.settings);
    ASSERT_FALSE(r.ranked.empty());
    best[i++] = r.ranked.front();
  }
  const search::Scored& fastest = best[0];
  const search::Scored& cheapest = best[1];
  SCOPED_TRACE("time: " + fastest.candidate.key() + ", cost: " + cheapest.candidate.key());
  EXPECT_LT(cheapest.evaluation.usd_per_s, fastest.evaluation.usd_per_s) << "fewer or cheaper devices";
  EXPECT_LT(cheapest.evaluation.usd_per_iteration(), fastest.evaluation.usd_per_iteration());
  EXPECT_LE(fastest.evaluation.iteration_time_s, cheapest.evaluation.iteration_time_s);
}

}  // namespace
}  // namespace tandem
