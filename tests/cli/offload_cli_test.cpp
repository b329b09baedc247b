// ZeRO-Offload from the command line: the bundled Llama 2 70B scenario fits one DGX H100 only
// with the optimizer on the host (what `simulate` says of both), the search finds only offloaded
// plans that fit, and a cluster that does not describe its nodes' host is refused (exit 2); and
// ZeRO-2's gradients taken again while their reduce-scatter still runs.
#include <gtest/gtest.h>

#include <string>

#include "tests/cli/cli_test_support.hpp"

namespace tandem {
namespace {

using cli_test::CliRun;
using cli_test::run_tandem;

TEST(OffloadCli, Llama70bFitsOneDgxH100OnlyWithTheOptimizerOnTheHost) {
  const CliRun offloaded = run_tandem("simulate llama2-70b-zero-offload");
  ASSERT_EQ(offloaded.status, 0) << offloaded.err;
  EXPECT_NE(offloaded.out.find("fits in memory"), std::string::npos) << offloaded.out;
  EXPECT_NE(offloaded.out.find("host memory per node (offloaded optimizer)"), std::string::npos) << offloaded.out;
  EXPECT_EQ(offloaded.out.find("optimizer_state"), std::string::npos) << offloaded.out;  // none on the GPUs

  const std::string path = cli_test::write_in_fresh_dir(
      "tandem-offload-cli", "on-device", "on-device.yaml",
      "name: on-device\nmodel: llama2-70b\ncluster: dgx-h100\nuse: {h100: 8}\n"
      "training: {global_batch_size: 16, micro_batch_size: 1, seq_length: 4096, precision: bf16}\n"
      "strategy: {type: hybrid, tensor_model_parallel_size: 8, sequence_parallel: true, recompute_granularity: full}\n");
  const CliRun on_device = run_tandem("simulate " + path);
  ASSERT_EQ(on_device.status, 0) << on_device.err;
  EXPECT_NE(on_device.out.find("OUT OF MEMORY"), std::string::npos) << on_device.out;
}

TEST(OffloadCli, TheSearchKeepsOnlyOffloadedPlansOnOneNode) {
  const CliRun run = run_tandem("search llama2-70b-zero-offload --top 3");
  ASSERT_EQ(run.status, 0) << run.err;
  const std::size_t top = run.out.find("top ");
  ASSERT_NE(top, std::string::npos) << run.out;
  const std::string best = run.out.substr(top, run.out.find('\n', run.out.find("  1 ", top)) - top);
  EXPECT_NE(best.find(" offload "), std::string::npos) << run.out;
}

TEST(OffloadCli, AClusterWithoutItsNodesHostIsRefusedNamingTheField) {
  const std::string path = cli_test::write_in_fresh_dir(
      "tandem-offload-cli", "no-host", "no-host.yaml",
      "name: no-host\nmodel: gpt2-124m\ncluster: h100-64-ethernet-100g\n"
      "training: {global_batch_size: 64, micro_batch_size: 8, seq_length: 1024, precision: bf16}\n"
      "strategy: {type: data_parallel, data_parallel_size: 8, offload_optimizer: true}\n");
  const CliRun run = run_tandem("simulate " + path);
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.err.find("strategy.offload_optimizer"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("node_groups[].host"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find(":5:"), std::string::npos) << run.err;  // the strategy's line
}

// ZeRO-2 frees each gradient once its reduce-scatter ends and takes it again in the next
// micro-batch's backward; when that comes first (GPT-3 13B: the reduce-scatter of a layer outlasts
// the head's backward), the simulator gives the gradient new memory, as a caching allocator does,
// and frees the old when the reduce-scatter ends (it once stopped with "tensor allocated twice").
TEST(OffloadCli, AZeroTwoGradientReacquiredBeforeItsReduceScatterEndsGetsNewMemory) {
  const std::string path = cli_test::write_in_fresh_dir(
      "tandem-offload-cli", "zero2", "zero2.yaml",
      "name: zero2\nmodel: gpt3-13b\ncluster: dgx-h100\nuse: {h100: 8}\n"
      "training: {global_batch_size: 64, micro_batch_size: 2, seq_length: 2048, precision: bf16}\n"
      "strategy: {type: hybrid, data_parallel_size: 8, zero_stage: 2, recompute_granularity: full}\n");
  const CliRun run = run_tandem("simulate " + path);
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_NE(run.out.find("fits in memory"), std::string::npos) << run.out;
}

}  // namespace
}  // namespace tandem
