// Measured convergence files (scenarios/convergence_table.hpp): the steps-to-target rule, which
// strategies share a variant, and bad files refused at their file, line and field.
#include "scenarios/convergence_table.hpp"

#include <gtest/gtest.h>

#include <string>

#include "common/input_error.hpp"
#include "tests/cli/cli_test_support.hpp"

namespace tandem {
namespace {

TEST(ConvergenceTable, StepsToTargetNeedFiveStepsAveragedAtOrBelowIt) {
  // Step 3 dips below 2.0 alone; the first window of 5 steps at or below 2.0 ends at step 7.
  const std::vector<double> losses = {3.0, 2.5, 1.9, 2.1, 2.0, 2.0, 1.9, 1.8, 1.7};
  EXPECT_EQ(steps_to_loss(losses, 2.0), 7);  // steps 3-7: (1.9 + 2.1 + 2.0 + 2.0 + 1.9) / 5 = 1.98
  EXPECT_EQ(steps_to_loss(losses, 1.0), std::nullopt);
  EXPECT_EQ(steps_to_loss({1.0, 1.0, 1.0, 1.0}, 5.0), std::nullopt);  // fewer steps than the window
}

TEST(ConvergenceTable, SplitsThatComputeTheSameUpdateShareTheSynchronousVariant) {
  ParallelConfig sync;
  ParallelConfig split = sync;
  split.tensor_model_parallel_size = 8;
  split.pipeline_model_parallel_size = 4;
  split.zero_stage = 3;
  EXPECT_TRUE(convergence_key(split) == convergence_key(sync));
  EXPECT_EQ(describe(convergence_key(sync)), "synchronous");
  ParallelConfig local = sync;
  local.local_sgd_steps = 4;
  EXPECT_FALSE(convergence_key(local) == convergence_key(sync));
  // Blocks do not matter without a period, staleness does not without servers.
  ParallelConfig blocks = sync;
  blocks.local_sgd_group_size = 8;
  EXPECT_TRUE(convergence_key(blocks) == convergence_key(sync));
  ParallelConfig stale = sync;
  stale.parameter_server_staleness = 2;
  EXPECT_TRUE(convergence_key(stale) == convergence_key(sync));
  stale.parameter_servers = 1;
  EXPECT_EQ(describe(convergence_key(stale)), "parameter servers, staleness 2");
}

std::string write_table(const std::string& name, const std::string& variants) {
  return cli_test::write_in_fresh_dir("tandem-convergence-table", name, "table.json",
                                      "{\n  \"model\": \"m\",\n  \"target_loss\": 2.0,\n  \"variants\": [\n" + variants +
                                          "\n  ]\n}\n");
}

TEST(ConvergenceTable, ReadsVariantsAndTheirStrategies) {
  const std::string path = write_table(
      "good",
      "    {\"name\": \"sync\", \"strategy\": \"data_parallel_size: 4\", \"losses\": [3, 2, 1, 1, 1, 1]},\n"
      "    {\"name\": \"int8\", \"strategy\": \"data_parallel_size: 4, gradient_compression: int8\", \"losses\": [3, 3]}");
  const ConvergenceTable t = load_convergence_table(path);
  ASSERT_EQ(t.variants.size(), 2u);
  EXPECT_EQ(t.target_loss, 2.0);
  ParallelConfig int8;
  int8.gradient_compression.type = Compression::int8;
  ASSERT_NE(t.find(convergence_key(int8)), nullptr);
  EXPECT_EQ(t.find(convergence_key(int8))->name, "int8");
  EXPECT_EQ(load_convergence_table(path, 1.5).target_loss, 1.5);
}

void expect_refused(const std::string& name, const std::string& variants, int line, const std::string& field,
                    const std::string& words) {
  const std::string path = write_table(name, variants);
  try {
    load_convergence_table(path);
    ADD_FAILURE() << name << ": accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), path) << e.what();
    EXPECT_EQ(e.line(), line) << e.what();
    EXPECT_EQ(e.field(), field) << e.what();
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
  }
}

TEST(ConvergenceTable, BadFilesAreRefusedAtTheirField) {
  const std::string sync = "    {\"name\": \"sync\", \"strategy\": \"data_parallel_size: 4\", \"losses\": [3, 2]},\n";
  // A misspelt knob would otherwise read as synchronous.
  expect_refused("typo", sync + "    {\"name\": \"h4\", \"strategy\": \"local_sgd_step: 4\", \"losses\": [3]}", 6,
                 "variants[1].strategy", "local_sgd_step");
  expect_refused("twice", sync + "    {\"name\": \"again\", \"strategy\": \"data_parallel_size: 8\", \"losses\": [3]}", 6,
                 "variants[1].strategy", "a second variant for synchronous");
  expect_refused("no losses", "    {\"name\": \"sync\", \"strategy\": \"data_parallel_size: 4\", \"losses\": [3, \"x\"]}",
                 5, "variants[0].losses", "step 2");
  expect_refused("bad codec", "    {\"name\": \"q\", \"strategy\": \"gradient_compression: int7\", \"losses\": [3]}", 5,
                 "variants[0].strategy", "int7");
}

}  // namespace
}  // namespace tandem
