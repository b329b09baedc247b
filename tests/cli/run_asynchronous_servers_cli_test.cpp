// Asynchronous parameter servers run for real on the CPU backend's threads (`tandem run`); what
// the backend cannot do with them (a checkpoint: every worker holds its own version of the
// parameters) is refused at the field, with the file and line, exit 2. (One worker and one server:
// localhost has two cores; tests/exec/cpu/parameter_server_training_test.cpp trains four workers.)
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "tests/cli/cli_test_support.hpp"

namespace tandem {
namespace {

const std::string kScenario =
    "name: tiny-async\nmodel: gpt-tiny\ncluster: localhost\n"
    "training: {global_batch_size: 8, micro_batch_size: 2, seq_length: 32, precision: fp32, lr: 0.001}\n"
    "strategy:\n  type: data_parallel\n  data_parallel_size: 1\n  parameter_servers: 1\n"
    "  parameter_server_asynchronous: true\n";

TEST(RunAsynchronousServersCli, WorkersTrainOnThreadsAndACheckpointIsRefusedAtTheField) {
  const std::string path = cli_test::write_in_fresh_dir("tandem-async-run", "run", "async.yaml", kScenario);
  const cli_test::CliRun run = cli_test::run_tandem("run " + path + " --backend cpu --iterations 3");
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_NE(run.out.find("asynchronous"), std::string::npos) << run.out;
  const std::string checkpoint = std::filesystem::path(path).parent_path() / "ck.bin";
  const cli_test::CliRun refused =
      cli_test::run_tandem("run " + path + " --backend cpu --iterations 3 --checkpoint " + checkpoint);
  EXPECT_EQ(refused.status, 2) << refused.err;
  EXPECT_NE(refused.err.find("async.yaml:9"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("strategy.parameter_server_asynchronous"), std::string::npos) << refused.err;
  EXPECT_FALSE(std::filesystem::exists(checkpoint));
  // An elastic run resumes its jobs from checkpoints: refused the same way, before any job starts.
  if (std::system("command -v mpirun >/dev/null 2>&1") == 0) {
    const cli_test::CliRun elastic = cli_test::run_tandem("run " + path + " --elastic --iterations 3 --checkpoint " + checkpoint);
    EXPECT_EQ(elastic.status, 2) << elastic.err;
    EXPECT_NE(elastic.err.find("async.yaml:9"), std::string::npos) << elastic.err;
    EXPECT_NE(elastic.err.find("--elastic"), std::string::npos) << elastic.err;
  }
}

}  // namespace
}  // namespace tandem
