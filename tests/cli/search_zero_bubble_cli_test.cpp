// The search weighs the zero-bubble schedules (issue 19) as any other knob: over a 4-stage-able
// small GPT on 2 x 4 H100 it simulates 1F1B, ZB-H1 and ZB-V (two chunks per stage: v = 2 without
// being asked) for one split and ranks ZB-V first there.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <string>

#include "tests/cli/cli_test_support.hpp"

namespace tandem {
namespace {

TEST(SearchZeroBubbleCli, ZeroBubbleVRanksFirstOnASmallPipelineWithTwoChunksPerStage) {
  const auto dir = cli_test::fresh_dir("tandem-search-zb", "v");
  const std::string scenario = (dir / "search-zb.yaml").string();
  std::ofstream(scenario) << "name: search-zb\n"
                             "model: {type: transformer, name: gpt-small-4l, num_layers: 4, hidden_size: 512,"
                             " num_attention_heads: 8, vocab_size: 8192, seq_length: 256}\n"
                             "cluster: tiny-h100\n"
                             "training: {global_batch_size: 16, micro_batch_size: 2}\n"
                             "strategy: {type: hybrid, data_parallel_size: 8}\n"
                             "search:\n"
                             "  tensor_model_parallel_size: [1]\n"
                             "  pipeline_model_parallel_size: [2]\n"
                             "  micro_batch_size: [2]\n"
                             "  zero_stage: [1]\n"
                             "  recompute_granularity: [none]\n"
                             "  pipeline_schedule: [1f1b, zb_h1, zb_v]\n"
                             "  top_k: 3\n";
  const cli_test::CliRun run = cli_test::run_tandem("search " + scenario + " --workers 2 --json -");
  ASSERT_EQ(run.status, 0) << run.err;
  const nlohmann::json report = nlohmann::json::parse(run.out);
  ASSERT_EQ(report["ranked"].size(), 3u) << report["ranked"];
  const nlohmann::json& best = report["ranked"][0]["knobs"];
  EXPECT_EQ(best["pipeline_schedule"], "zb_v") << report["ranked"][0]["candidate"];
  EXPECT_EQ(best["virtual_pipeline_model_parallel_size"], 2);
  EXPECT_LT(report["ranked"][0]["objective"].get<double>(), report["ranked"][1]["objective"].get<double>());
}

}  // namespace
}  // namespace tandem
