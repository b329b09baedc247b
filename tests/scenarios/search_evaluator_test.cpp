// The search's real evaluator (strategies built and traced here, simulated in worker
// processes): its bounds are true lower bounds of what the simulator predicts, the winner does
// not depend on the number of workers, and on the mixed cluster a heterogeneity-aware strategy
// beats the best uniform one.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "scenarios/candidate_scenario.hpp"
#include "scenarios/search_evaluator.hpp"
#include "strategies/search/analytic_estimate.hpp"
#include "scenarios/search_spec.hpp"

namespace tandem {
namespace {

namespace fs = std::filesystem;
using search::Candidate;

Candidate make(int tp, int pp, int dp, std::int64_t mbs, int zero = 0, Recompute rc = Recompute::none) {
  Candidate c;
  c.tp = tp, c.pp = pp, c.dp = dp, c.micro_batch_size = mbs, c.zero_stage = zero, c.recompute = rc;
  return c;
}

void expect_bounds_below_simulation(const Scenario& base, const std::vector<Candidate>& candidates) {
  SimulationEvaluator evaluator(base, 2);
  const auto estimates = evaluator.estimate(candidates);
  const auto evaluations = evaluator.evaluate(candidates);
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    SCOPED_TRACE(candidates[i].key());
    ASSERT_TRUE(estimates[i].valid) << estimates[i].invalid_reason;
    ASSERT_TRUE(evaluations[i].ok) << evaluations[i].error;
    const search::Estimate& lb = estimates[i];
    const search::Evaluation& sim = evaluations[i];
    EXPECT_GT(lb.iteration_time_s, 0);
    EXPECT_LE(lb.iteration_time_s, sim.iteration_time_s);
    EXPECT_GT(lb.peak_memory_bytes, 0);
    EXPECT_LE(lb.peak_memory_bytes, sim.peak_memory_bytes);
    EXPECT_LE(lb.memory_fraction, sim.memory_fraction);
    EXPECT_LE(lb.energy_per_iteration_j, sim.energy_per_iteration_j);
    EXPECT_DOUBLE_EQ(lb.usd_per_s, sim.usd_per_s);
  }
}

TEST(SearchEvaluator, BoundsAreLowerBoundsOfTheSimulation) {
  const Scenario base = load_scenario("search-tiny-h100");
  Candidate gpipe = make(1, 4, 2, 2);
  gpipe.schedule = PipelineSchedule::gpipe;
  Candidate interleaved = make(2, 2, 2, 1);
  interleaved.schedule = PipelineSchedule::interleaved_1f1b;
  interleaved.virtual_stages = 2;
  expect_bounds_below_simulation(base, {make(1, 1, 8, 2), make(2, 2, 2, 1, 1), make(1, 4, 2, 1, 0, Recompute::full),
                                        make(4, 2, 1, 2, 0, Recompute::selective), make(2, 1, 4, 1, 1), gpipe,
                                        interleaved, make(2, 4, 1, 4, 0, Recompute::selective)});
}

// `search_lines`: what the search section says beyond its pins (tp 8, mbs 1, ZeRO-1, no recompute).
std::string mixed_search_scenario(const std::string& search_lines = "  pipeline_model_parallel_size: [1, 3]\n") {
  // A small GPT on the 192-GPU mixed cluster: fast enough for a test, heterogeneous enough for
  // speed-proportional splits to matter.
  const fs::path dir = fs::temp_directory_path() / ("tandem-search-eval-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path path = dir / "mixed-search.yaml";
  std::ofstream(path) << "name: mixed-small-search\n"
                         "model: {type: transformer, num_layers: 6, hidden_size: 1024, num_attention_heads: 16,\n"
                         "        vocab_size: 8192, seq_length: 512}\n"
                         "cluster: mixed\n"
                         "training: {global_batch_size: 48}\n"
                         "strategy: {type: hybrid, tensor_model_parallel_size: 8, data_parallel_size: 24}\n"
                         "simulation: {collective_fidelity: aggregated}\n"
                         "search:\n"
                         "  tensor_model_parallel_size: 8\n"
                         "  micro_batch_size: 1\n"
                         "  zero_stage: 1\n"
                         "  recompute_granularity: none\n"
                      << search_lines;
  return path.string();
}

TEST(SearchEvaluator, PipelineBoundCountsFillAndDrain) {
  // Four stages, one micro-batch each: the fill and drain are most of the iteration, so the
  // bound is well above the busiest rank's compute.
  const Scenario base = load_scenario("search-tiny-h100");
  SimulationEvaluator evaluator(base, 1);
  const Scenario s = scenario_for(base, make(1, 4, 2, 8));
  const search::AnalyticEstimate a = search::estimate_strategy(*make_strategy(s), s.cluster);
  Seconds busiest_s = 0;
  for (const auto& r : a.ranks) busiest_s = std::max(busiest_s, r.compute_s);
  EXPECT_GT(a.iteration_time_s, 2 * busiest_s);
}

TEST(SearchEvaluator, BoundsHoldOnTheMixedCluster) {
  const SearchScenario spec = load_search_scenario(mixed_search_scenario());
  Candidate aware = make(8, 3, 8, 1, 1);
  aware.partition = HybridConfig::Partition::proportional;
  Candidate shares = make(8, 1, 24, 1, 1);
  shares.batch_split = BatchSplit::proportional;
  expect_bounds_below_simulation(spec.base, {aware, shares});
}

TEST(SearchEvaluator, SameWinnerWithOneAndSeveralWorkers) {
  const SearchScenario spec = load_search_scenario("search-tiny-h100");
  const search::Enumeration space = search::enumerate(spec.space, spec.base.cluster, spec.base.training);
  std::vector<std::vector<std::pair<std::string, double>>> rankings;
  for (int workers : {1, 3}) {
    SimulationEvaluator evaluator(spec.base, workers);
    search::SearchSettings settings = spec.settings;
    settings.batch_size = 2 * workers;  // as the CLI does: more workers, larger batches
    const search::SearchResult r = search::run_search(space, evaluator, settings);
    std::vector<std::pair<std::string, double>> ranking;
    for (const auto& s : r.ranked) ranking.emplace_back(s.candidate.key(), s.value);
    rankings.push_back(ranking);
  }
  ASSERT_EQ(rankings[0].size(), static_cast<std::size_t>(spec.settings.top_k));
  EXPECT_EQ(rankings[0], rankings[1]);
}

TEST(SearchEvaluator, GuidedFindsTheExhaustiveOptimumOfARealSpace) {
  const SearchScenario spec = load_search_scenario("search-tiny-h100");
  const search::Enumeration space = search::enumerate(spec.space, spec.base.cluster, spec.base.training);
  search::SearchSettings exhaustive = spec.settings, guided = spec.settings;
  exhaustive.algorithm = search::Algorithm::exhaustive;
  guided.algorithm = search::Algorithm::guided;
  guided.max_evaluations = static_cast<int>(space.candidates.size()) / 2;
  SimulationEvaluator a(spec.base, 2), b(spec.base, 2);
  const search::SearchResult full = search::run_search(space, a, exhaustive);
  const search::SearchResult found = search::run_search(space, b, guided);
  ASSERT_FALSE(full.ranked.empty());
  ASSERT_FALSE(found.ranked.empty());
  EXPECT_EQ(found.ranked.front().candidate.key(), full.ranked.front().candidate.key());
  EXPECT_EQ(found.ranked.front().value, full.ranked.front().value);
  EXPECT_LE(found.evaluated, guided.max_evaluations);
}

TEST(SearchEvaluator, HeterogeneityAwareBeatsUniformOnTheMixedCluster) {
  const SearchScenario spec = load_search_scenario(mixed_search_scenario());
  const search::Enumeration space = search::enumerate(spec.space, spec.base.cluster, spec.base.training);
  SimulationEvaluator evaluator(spec.base, 2);
  const search::SearchResult r = search::run_search(space, evaluator, spec.settings);
  const search::Scored* aware = search::best_of_kind(r, true);
  const search::Scored* uniform = search::best_of_kind(r, false);
  ASSERT_NE(aware, nullptr);
  ASSERT_NE(uniform, nullptr);
  EXPECT_LT(aware->value, uniform->value) << aware->candidate.key() << " vs " << uniform->candidate.key();
  EXPECT_TRUE(r.ranked.front().candidate.heterogeneity_aware());
}

TEST(SearchEvaluator, RefinedPartitionIsTheBestOfAllPartitionsOfAMixedPipeline) {
  // Three stages (H100, A100, V100 nodes), six layers: ten partitions in all, simulated here as
  // brute force; the guided search with refinement must find the best of them.
  const SearchScenario spec = load_search_scenario(mixed_search_scenario(
      "  pipeline_model_parallel_size: 3\n  batch_split: even\n  pipeline_partition: [proportional, refined]\n"
      "  algorithm: guided\n"));
  ASSERT_GT(spec.settings.refine_evaluations, 0);
  const search::Enumeration space = search::enumerate(spec.space, spec.base.cluster, spec.base.training);
  ASSERT_EQ(space.candidates.size(), 1u);
  SimulationEvaluator evaluator(spec.base, 2);
  const search::SearchResult r = search::run_search(space, evaluator, spec.settings);
  ASSERT_FALSE(r.ranked.empty());

  std::vector<Candidate> every_partition;
  for (int a = 1; a <= 4; ++a)
    for (int b = 1; a + b <= 5; ++b) {
      Candidate c = space.candidates.front();
      c.partition = HybridConfig::Partition::uniform;
      c.layers_per_stage = {a, b, 6 - a - b};
      every_partition.push_back(c);
    }
  SimulationEvaluator brute(spec.base, 2);
  const auto evaluations = brute.evaluate(every_partition);
  double best_s = INFINITY;
  for (const auto& e : evaluations) best_s = std::min(best_s, search::objective_value(spec.settings.objective, e, spec.settings.constraints));
  EXPECT_EQ(r.ranked.front().value, best_s) << r.ranked.front().candidate.key();
  const search::Scored* proportional = nullptr;
  for (const auto& s : r.all)
    if (s.candidate == space.candidates.front()) proportional = &s;
  ASSERT_NE(proportional, nullptr);
  EXPECT_LE(r.ranked.front().value, proportional->value);
  EXPECT_LT(r.evaluated, static_cast<std::int64_t>(every_partition.size()));
}

}  // namespace
}  // namespace tandem
