// `tandem run --backend cuda` refusals that hold with or without a GPU: checkpoints (the CPU
// backend's hold logical tensors, which no process of a multi-GPU run has) exit 2 naming the
// option, before any device is probed.
#include <gtest/gtest.h>

#include <string>

#include "tests/cli/cli_test_support.hpp"

namespace tandem {
namespace {

using cli_test::CliRun;
using cli_test::run_tandem;

TEST(CudaRunCli, RefusesCheckpointAndResumeWithExitTwoNamingTheOption) {
  for (const std::string option : {"--checkpoint", "--resume"}) {
    const CliRun run = run_tandem("run gpt-tiny-localhost --backend cuda --iterations 1 " + option + " /tmp/x.ck");
    EXPECT_EQ(run.status, 2) << option;
    EXPECT_NE(run.err.find(option), std::string::npos) << run.err;
    EXPECT_NE(run.err.find("cpu backend only"), std::string::npos) << run.err;
  }
}

}  // namespace
}  // namespace tandem
