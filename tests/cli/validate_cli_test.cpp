// `tandem validate` end to end: the bundled run prints the NCCL bus-bandwidth table after the
// training table (--match selects in both), and --check counts the NCCL cases' bands too.
#include <gtest/gtest.h>

#include <string>

#include "tests/cli/cli_test_support.hpp"

namespace tandem {
namespace {

using cli_test::CliRun;
using cli_test::run_tandem;

TEST(ValidateCli, TheBundledRunPrintsTheNcclCasesBesideTheTrainingOnes) {
  // Only the H200 NCCL cases match: no training table, one NCCL row per case and its summary.
  const CliRun nccl = run_tandem("validate --match hgx-h200 --jobs 2 --check");
  ASSERT_EQ(nccl.status, 0) << nccl.out << nccl.err;
  EXPECT_EQ(nccl.out.find("compute/comm/idle"), std::string::npos) << nccl.out;
  EXPECT_NE(nccl.out.find("hgx-h200-all-reduce-8mib"), std::string::npos) << nccl.out;
  EXPECT_NE(nccl.out.find("GB/s"), std::string::npos) << nccl.out;
  EXPECT_NE(nccl.out.find("4 NCCL cases, 0 failed"), std::string::npos) << nccl.out;
  // A training case and no NCCL case: only the training table.
  const CliRun training = run_tandem("validate --match flash-attn-125m");
  ASSERT_EQ(training.status, 0) << training.err;
  EXPECT_NE(training.out.find("flash-attn-125m-8xa100"), std::string::npos) << training.out;
  EXPECT_EQ(training.out.find("NCCL case"), std::string::npos) << training.out;
}

}  // namespace
}  // namespace tandem
