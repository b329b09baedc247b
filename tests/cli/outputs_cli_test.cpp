// A command's outputs are committed together and only when it succeeds (common/output_set.hpp):
// a failed command leaves an existing --json as it was, and an output that cannot be written is
// refused before the work starts.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "tests/cli/cli_test_support.hpp"

namespace tandem {
namespace {

namespace fs = std::filesystem;
using cli_test::CliRun;
using cli_test::run_tandem;

using cli_test::read_file;

fs::path fresh_dir(const std::string& name) { return cli_test::fresh_dir("tandem-outputs", name); }

TEST(OutputsCli, AMissingTraceFolderIsRefusedBeforeTheWorkAndTheJsonStays) {
  const fs::path dir = fresh_dir("missing-folder");
  std::ofstream(dir / "p.json") << "old\n";
  for (const std::string command : {"simulate gpt2-124m-dp8", "run gpt-tiny-localhost --iterations 1"}) {
    const CliRun run =
        run_tandem(command + " --json " + (dir / "p.json").string() + " --trace " + (dir / "no-such/t.json").string());
    EXPECT_EQ(run.status, 2) << command << ": " << run.err;
    EXPECT_NE(run.err.find("--trace"), std::string::npos) << run.err;
    EXPECT_NE(run.err.find("no such folder"), std::string::npos) << run.err;
    EXPECT_EQ(run.out.find("iter"), std::string::npos) << command << " started working: " << run.out;
    EXPECT_EQ(read_file(dir / "p.json"), "old\n") << command;
  }
}

TEST(OutputsCli, ASearchWithNoFeasibleStrategyLeavesTheJsonAndWinnerAsTheyWere) {
  const fs::path dir = fresh_dir("infeasible");
  // search-tiny-h100's space with a model no split of 8 x 80 GB can hold (~3.3 T parameters).
  std::ofstream(dir / "huge.yaml") << "name: huge\n"
                                      "model:\n  type: transformer\n  name: huge\n  num_layers: 64\n"
                                      "  hidden_size: 65536\n  num_attention_heads: 64\n  vocab_size: 8192\n"
                                      "  seq_length: 256\n"
                                      "cluster: tiny-h100\n"
                                      "training:\n  global_batch_size: 16\n  micro_batch_size: 1\n"
                                      "strategy:\n  type: hybrid\n  data_parallel_size: 8\n"
                                      "search:\n  tensor_model_parallel_size: [1, 2, 4]\n"
                                      "  pipeline_model_parallel_size: [1, 2]\n";
  std::ofstream(dir / "search.json") << "old\n";
  std::ofstream(dir / "winner.yaml") << "old\n";
  const CliRun run = run_tandem("search " + (dir / "huge.yaml").string() + " --workers 1 --json " +
                                (dir / "search.json").string() + " --winner " + (dir / "winner.yaml").string());
  EXPECT_EQ(run.status, 1) << run.out << run.err;
  EXPECT_NE(run.out.find("no feasible strategy"), std::string::npos) << run.out;
  EXPECT_EQ(read_file(dir / "search.json"), "old\n");
  EXPECT_EQ(read_file(dir / "winner.yaml"), "old\n");
}

TEST(OutputsCli, ASuccessfulCommandLeavesOnlyItsOutputs) {
  const fs::path dir = fresh_dir("success");
  const CliRun run = run_tandem("simulate gpt2-124m-dp8 --json " + (dir / "p.json").string() + " --trace " +
                                (dir / "t.json").string() + " --chrome-trace " + (dir / "c.json").string());
  ASSERT_EQ(run.status, 0) << run.err;
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  EXPECT_EQ(names, (std::set<std::string>{"c.json", "p.json", "t.json"}));
}

}  // namespace
}  // namespace tandem
