// `tandem run` measures the steady iterations by default, as the simulator does: with
// --overlap-param-gather the first step starts from parameters already in place and is run as a
// warm-up, unless --warmup says otherwise; without it nothing is warmed up unless asked.
#include <gtest/gtest.h>

#include <string>

#include "tests/cli/cli_test_support.hpp"

namespace tandem {
namespace {

std::string scenario(bool overlap_param_gather) {
  return std::string("name: tiny-zero1\nmodel: gpt-tiny\ncluster: localhost\n"
                     "training: {global_batch_size: 4, micro_batch_size: 2, seq_length: 32, precision: bf16, lr: 0.001}\n"
                     "strategy:\n  type: hybrid\n  data_parallel_size: 2\n  zero_stage: 1\n  overlap_param_gather: ") +
         (overlap_param_gather ? "true\n" : "false\n");
}

int warmups(const std::string& out) {
  int n = 0;
  for (std::size_t at = out.find("(warm-up)"); at != std::string::npos; at = out.find("(warm-up)", at + 1)) ++n;
  return n;
}

TEST(RunWarmupCli, TheStepBeforeTheFirstParameterGatherIsAWarmUpUnlessAskedOtherwise) {
  const std::string overlapped = cli_test::write_in_fresh_dir("tandem-run-warmup", "on", "on.yaml", scenario(true));
  const std::string plain = cli_test::write_in_fresh_dir("tandem-run-warmup", "off", "off.yaml", scenario(false));
  const cli_test::CliRun on = cli_test::run_tandem("run " + overlapped + " --backend cpu --iterations 2");
  ASSERT_EQ(on.status, 0) << on.err;
  EXPECT_EQ(warmups(on.out), 1) << on.out;
  const cli_test::CliRun asked = cli_test::run_tandem("run " + overlapped + " --backend cpu --iterations 2 --warmup 0");
  ASSERT_EQ(asked.status, 0) << asked.err;
  EXPECT_EQ(warmups(asked.out), 0) << asked.out;
  const cli_test::CliRun off = cli_test::run_tandem("run " + plain + " --backend cpu --iterations 2");
  ASSERT_EQ(off.status, 0) << off.err;
  EXPECT_EQ(warmups(off.out), 0) << off.out;
}

}  // namespace
}  // namespace tandem
