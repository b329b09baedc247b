// `tandem run --backend cuda` refusals that hold with or without a GPU: a checkpoint that cannot be
// written or read is refused with exit 2 naming the option or the file, before any device is
// probed (so the same message reaches a user on a machine without a GPU).
#include <gtest/gtest.h>

#include <string>

#include "tests/cli/cli_test_support.hpp"

namespace tandem {
namespace {

using cli_test::CliRun;
using cli_test::run_tandem;

TEST(CudaRunCli, ACheckpointInAMissingFolderIsRefusedWithExitTwoNamingTheOption) {
  const CliRun run = run_tandem("run gpt-tiny-localhost --backend cuda --iterations 1 --checkpoint /no-such-folder/x.ck");
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.err.find("--checkpoint"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("/no-such-folder"), std::string::npos) << run.err;
}

TEST(CudaRunCli, AMissingResumeFileIsRefusedWithExitTwoNamingTheFileBeforeAnyDeviceIsProbed) {
  const CliRun run = run_tandem("run gpt-tiny-localhost --backend cuda --iterations 1 --resume /tmp/tandem-no-such.ck");
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.err.find("/tmp/tandem-no-such.ck"), std::string::npos) << run.err;
  EXPECT_EQ(run.err.find("CUDA device"), std::string::npos) << run.err;
}

}  // namespace
}  // namespace tandem
