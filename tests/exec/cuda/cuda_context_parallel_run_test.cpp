// Context parallelism trained on the CUDA backend against the CPU backend: a small rotary-position
// GPT with grouped-query heads and attention dropout, each sequence split over two GPUs (one
// process each) in the zigzag layout, K/V all-gathered and their gradients reduce-scattered by
// NCCL; `tandem run --backend cuda` under mpirun gives the CPU backend's loss at every step
// (tests/exec/cuda/cuda_run_test.cpp's tolerance), with flash attention and with the unfused
// kernel. Skipped without two GPUs or mpirun.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "exec/cuda/cuda_run.hpp"
#include "tests/cli/cli_test_support.hpp"
#include "tests/exec/cuda/cuda_cli_support.hpp"
#include "tests/kernels/cuda/cuda_test_support.hpp"

namespace tandem::exec::cuda {
namespace {

// The scenario: cp 2 over a 32-token sequence (four chunks of 8), fp32, dropout on the
// attention probabilities only (their mask keyed by sequence positions on both backends).
std::string cp2_scenario(bool flash) {
  return std::string("name: cuda-cp2\n") +
         "model: {name: gpt-tiny-rope, num_layers: 2, hidden_size: 64, num_attention_heads: 4, num_query_groups: 2,\n"
         "        vocab_size: 256, seq_length: 32, bias: false, position: rope, use_flash_attn: " +
         (flash ? "true" : "false") +
         ",\n"
         "        hidden_dropout: 0, attention_dropout: 0.1}\n"
         "cluster: localhost\n"
         "training: {global_batch_size: 4, micro_batch_size: 2, seq_length: 32, precision: fp32, lr: 0.001}\n"
         "strategy: {type: hybrid, context_parallel_size: 2}\n";
}

TEST(CudaContextParallel, TwoRanksOfOneSequenceTrainAsOnTheCpuBackend) {
  TANDEM_REQUIRE_GPU();
  if (cuda_device_count() < 2) GTEST_SKIP() << "fewer than two CUDA devices";
  if (std::system("command -v mpirun >/dev/null 2>&1") != 0) GTEST_SKIP() << "no mpirun";
  for (bool flash : {true, false}) {
    SCOPED_TRACE(flash ? "flash attention" : "unfused attention");
    const std::string path =
        cli_test::write_in_fresh_dir("tandem-cuda-cp", flash ? "flash" : "unfused", "cp2.yaml", cp2_scenario(flash));
    const testing::CpuAndGpus r = testing::expect_gpus_train_as_the_cpu(path, 3, 2);
    if (r.on_gpus.status != 0) continue;
    const std::vector<double> got = testing::iteration_losses(r.on_gpus);
    EXPECT_LT(got.back(), got.front());  // it trains
  }
}

}  // namespace
}  // namespace tandem::exec::cuda
