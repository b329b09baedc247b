// The search weighs context parallelism (issue 19): Llama-3-8B on 128k-token sequences over 32
// H100. Tensor 8 inside a node with whole sequences per replica (cp 1, data 4) runs out of
// memory unless it recomputes whole layers; splitting each sequence over 2 or 4 nodes fits with
// selective recompute, and the best plan uses context parallelism.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>

#include "tests/cli/cli_test_support.hpp"

namespace tandem {
namespace {

TEST(SearchContextParallelCli, LongSequencesThatDoNotFitOnANodeAreSplitByContextParallelism) {
  const cli_test::CliRun run =
      cli_test::run_tandem("search search-llama3-8b-128k --workers 2 --json -");
  ASSERT_EQ(run.status, 0) << run.err;
  const nlohmann::json report = nlohmann::json::parse(run.out);
  ASSERT_FALSE(report["ranked"].empty());
  const auto& best = report["ranked"][0];
  EXPECT_GT(best["knobs"]["context_parallel_size"].get<int>(), 1) << best["candidate"];
  for (const auto& r : report["ranked"])
    EXPECT_FALSE(r["knobs"]["context_parallel_size"].get<int>() == 1 &&
                 r["knobs"]["pipeline_model_parallel_size"].get<int>() == 1 &&
                 r["knobs"]["recompute_granularity"].get<std::string>() == "selective")
        << "tensor 8 x data 4 holding whole 128k sequences without full recompute cannot fit: " << r["candidate"];
}

}  // namespace
}  // namespace tandem
