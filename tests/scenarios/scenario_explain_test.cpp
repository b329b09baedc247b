// `tandem explain`: every field of the resolved scenario, each with its source (the file's line
// or a default), and the text is itself a scenario that loads back to the same plan.
#include "scenarios/scenario_explain.hpp"

#include <gtest/gtest.h>

#include <string>

#include "tests/platforms/platform_test_support.hpp"

namespace tandem {
namespace {

// The explained line of `field` (its first occurrence as "  field: ").
std::string line_of_field(const std::string& text, const std::string& field) {
  const std::size_t at = text.find(field + ": ");
  if (at == std::string::npos) return "";
  const std::size_t end = text.find('\n', at);
  return text.substr(at, end - at);
}

TEST(ScenarioExplain, SpelledFieldsNameTheirLineAndTheRestSayDefault) {
  const std::string text = explained_scenario_yaml(load_scenario("gpt3-175b-3d"));
  EXPECT_NE(line_of_field(text, "tensor_model_parallel_size").find("# line 14"), std::string::npos) << text;
  EXPECT_NE(line_of_field(text, "model").find("# line 6"), std::string::npos) << text;
  EXPECT_NE(line_of_field(text, "ddp_bucket_size").find("# default"), std::string::npos) << text;
  EXPECT_NE(line_of_field(text, "compute_fidelity").find("# default"), std::string::npos) << text;
}

TEST(ScenarioExplain, TheExplanationLoadsBackToTheSamePlan) {
  for (const char* name : {"gpt3-175b-3d", "gpt-tiny-localhost", "mixed-3d-proportional", "llama2-70b-h100"}) {
    const Scenario original = load_scenario(name);
    test::TempDir dir;
    const Scenario back = load_scenario(dir.write("explained.yaml", explained_scenario_yaml(original)));
    EXPECT_EQ(back.parallel.tensor_model_parallel_size, original.parallel.tensor_model_parallel_size) << name;
    EXPECT_EQ(back.parallel.pipeline_model_parallel_size, original.parallel.pipeline_model_parallel_size) << name;
    EXPECT_EQ(back.parallel.data_parallel_size, original.parallel.data_parallel_size) << name;
    EXPECT_EQ(back.training.global_batch_size, original.training.global_batch_size) << name;
    EXPECT_EQ(back.cluster.device_count(), original.cluster.device_count()) << name;
  }
}

}  // namespace
}  // namespace tandem
