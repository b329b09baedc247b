// The `search:` section of a scenario: pins, lists and bounds become the space; every mistake is
// one InputError naming file, line and field.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "scenarios/search_spec.hpp"

namespace tandem {
namespace {

namespace fs = std::filesystem;

const char* kBase =
    "name: s\n"                              // 1
    "model: gpt-tiny\n"                      // 2
    "cluster: tiny-h100\n"                   // 3
    "training: {global_batch_size: 16}\n"    // 4
    "strategy: {type: hybrid, data_parallel_size: 8}\n"  // 5
    "search:\n";                             // 6

std::string write_search(const std::string& search_lines) {
  const fs::path dir = fs::temp_directory_path() / ("tandem-search-spec-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path path = dir / "search.yaml";
  std::ofstream(path) << kBase << search_lines;
  return path.string();
}

InputError error_of(const std::string& search_lines) {
  try {
    load_search_scenario(write_search(search_lines));
  } catch (const InputError& e) {
    return e;
  }
  ADD_FAILURE() << "expected an InputError for:\n" << search_lines;
  return InputError("", 0, "", "");
}

TEST(SearchSpec, PinsListsAndBoundsShapeTheSpace) {
  const SearchScenario s = load_search_scenario(write_search(
      "  tensor_model_parallel_size: {max: 2}\n"
      "  pipeline_model_parallel_size: [1, 2]\n"
      "  zero_stage: 1\n"
      "  recompute_granularity: [none, full]\n"
      "  objective: energy\n"
      "  top_k: 3\n"
      "  memory_headroom: 0.2\n"
      "  algorithm: guided\n"
      "  max_evaluations: 9\n"));
  EXPECT_EQ(s.space.tp, (std::vector<int>{1, 2}));
  EXPECT_EQ(s.space.pp, (std::vector<int>{1, 2}));
  EXPECT_EQ(s.space.zero_stage, (std::vector<int>{1}));
  EXPECT_EQ(s.space.recompute, (std::vector<Recompute>{Recompute::none, Recompute::full}));
  EXPECT_EQ(s.settings.objective, search::Objective::energy);
  EXPECT_EQ(s.settings.top_k, 3);
  EXPECT_DOUBLE_EQ(s.settings.constraints.memory_headroom, 0.2);
  EXPECT_EQ(s.settings.algorithm, search::Algorithm::guided);
  EXPECT_EQ(s.settings.max_evaluations, 9);
}

TEST(SearchSpec, RefinedPartitionsTurnOnTheRefinementWithoutBeingAPartition) {
  const SearchScenario plain = load_search_scenario(write_search("  pipeline_partition: [uniform, proportional]\n"));
  EXPECT_EQ(plain.settings.refine_evaluations, 0);
  const SearchScenario refined = load_search_scenario(write_search("  pipeline_partition: [uniform, refined]\n"));
  EXPECT_EQ(refined.space.partition, std::vector{HybridConfig::Partition::uniform});
  EXPECT_GT(refined.settings.refine_evaluations, 0);
  const SearchScenario bounded =
      load_search_scenario(write_search("  pipeline_partition: refined\n  refine_evaluations: 5\n"));
  EXPECT_FALSE(bounded.space.partition.empty());  // the cluster's defaults
  EXPECT_EQ(bounded.settings.refine_evaluations, 5);
}

TEST(SearchSpec, WithoutASearchSectionEveryKnobTakesItsDefaults) {
  const SearchScenario s = load_search_scenario("gpt-tiny-localhost");
  EXPECT_FALSE(s.space.tp.empty());
  EXPECT_FALSE(s.space.micro_batch_size.empty());
  EXPECT_EQ(s.settings.objective, search::Objective::time);
}

TEST(SearchSpec, MistakesNameFileLineAndField) {
  struct Case {
    const char* text;
    int line;
    const char* field;
  } cases[] = {
      {"  zero_stage: 4\n", 7, "search.zero_stage"},
      {"  tensor_model_parallel_size: [1, two]\n", 7, "search.tensor_model_parallel_size"},
      {"  objective: speed\n", 7, "search.objective"},
      {"  top_k: 0\n", 7, "search.top_k"},
      {"  memory_headroom: 1.5\n", 7, "search.memory_headroom"},
      {"  pipeline_model_parallel_size: {min: 3, max: 2}\n", 7, "search.pipeline_model_parallel_size"},
      {"  tensor_model_parallel_size: {min: 3, max: 3}\n", 7, "search.tensor_model_parallel_size"},
      {"  recompute_granularity: [none, some]\n", 7, "search.recompute_granularity"},
      {"  top_k: 3\n  tensor_parallel: 2\n", 8, "search.tensor_parallel"},
      {"  pipeline_partition: [uniform, balanced]\n", 7, "search.pipeline_partition"},
      {"  pipeline_partition: []\n", 7, "search.pipeline_partition"},
      {"  pipeline_partition: uniform\n  refine_evaluations: 4\n", 8, "search.refine_evaluations"},
      {"  pipeline_partition: [refined]\n  refine_evaluations: 0\n", 8, "search.refine_evaluations"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    const InputError e = error_of(c.text);
    EXPECT_NE(e.file().find("search.yaml"), std::string::npos);
    EXPECT_EQ(e.line(), c.line) << e.what();
    EXPECT_EQ(e.field().rfind(c.field, 0), 0u) << e.field() << ": " << e.what();
  }
}

}  // namespace
}  // namespace tandem
