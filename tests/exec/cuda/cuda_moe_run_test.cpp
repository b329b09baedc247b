// A mixture-of-experts model trained on the CUDA backend against the CPU backend: the small GPT
// of the CPU equivalence tests with experts (4 experts, top-2, capacity 1.0x so that picks are
// dropped, a shared expert, Switch's load-balancing loss) gives the CPU's loss at every step
// (tests/exec/cuda/cuda_run_test.cpp's tolerance), its parameters (the equivalence tests' bound for
// experts) and its measured router load; with the experts split over two GPUs (one process each,
// tokens exchanged by NCCL all-to-all) `tandem run --backend cuda` gives the CPU backend's losses.
// Skipped without a GPU (the second case without two GPUs or mpirun).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "exec/cpu/cpu_run.hpp"
#include "exec/cuda/cuda_run.hpp"
#include "tests/cli/cli_test_support.hpp"
#include "tests/exec/cuda/cuda_cli_support.hpp"
#include "tests/exec/cpu/hybrid_shape.hpp"
#include "tests/kernels/cuda/cuda_test_support.hpp"

namespace tandem::exec::cuda {
namespace {

using testing::expect_losses_near;
constexpr float kLr = 1e-3f;
constexpr int kSteps = 3;
// Per element |a − b| <= 1e-4·|b| + 1e-2·lr·steps: round-off relative to the weight, plus 1% of
// the AdamW movement for an element whose gradient nearly cancels (tests/exec/cpu/equivalence_test.cpp,
// kMoeParamAbsolute).
constexpr double kParamRelative = 1e-4, kParamAbsolute = 1e-2;

std::shared_ptr<const Model> moe_gpt() { return cpu::testing::small_moe_gpt("gpt-small-moe-cuda-test", 4, 64, 4, 256, 32); }

cpu::RunOptions options_for(const Model& model) {
  cpu::RunOptions o;
  o.iterations = kSteps;
  cpu::configure_for_model(o, model, 32);
  o.capture_parameters = true;
  o.timeout_s = 60;
  return o;
}

// Every iteration's loss of a run.
std::vector<double> losses(const cpu::RunResult& run) {
  std::vector<double> out;
  for (const cpu::IterationStats& s : run.iterations) out.push_back(s.loss);
  return out;
}

TEST(CudaMoe, AMixtureOfExpertsModelTrainsAsOnTheCpuBackend) {
  TANDEM_REQUIRE_GPU();
  TrainingConfig training;
  training.seq_length = 32;
  training.lr = kLr;
  const auto model = moe_gpt();
  cpu::testing::HybridShape one_rank;
  one_rank.moe = true;
  auto strategy = cpu::testing::make_hybrid(model, one_rank, training, 20'000);
  const cpu::RunOptions o = options_for(*model);
  const cpu::RunResult reference = cpu::run_cpu(*strategy, o);
  CudaRunExtras extras;
  extras.math = kernels::cuda::MathMode::fp32;
  const cpu::RunResult gpu = run_cuda(*strategy, o, extras);
  const std::vector<double> got = losses(gpu);
  expect_losses_near(got, losses(reference));
  EXPECT_LT(got.back(), got.front());  // it trains
  ASSERT_EQ(gpu.parameters.size(), 1u);
  ASSERT_EQ(gpu.parameters[0].size(), reference.parameters[0].size());
  for (const auto& [name, want] : reference.parameters[0]) {
    const std::vector<float>& got = gpu.parameters[0].at(name);
    ASSERT_EQ(got.size(), want.size()) << name;
    for (std::size_t i = 0; i < want.size(); ++i)
      if (std::abs(static_cast<double>(got[i]) - want[i]) >
          kParamRelative * std::abs(static_cast<double>(want[i])) + kParamAbsolute * kLr * kSteps) {
        ADD_FAILURE() << name << "[" << i << "]: " << got[i] << " on the GPU, " << want[i] << " on the CPU";
        break;
      }
  }
  // Every forward routing measured, the same picks.
  EXPECT_GT(reference.router_load.routings, 0);
  EXPECT_EQ(gpu.router_load.routings, reference.router_load.routings);
  EXPECT_NEAR(gpu.router_load.mean_ratio(), reference.router_load.mean_ratio(), 1e-6);
}

TEST(CudaMoe, ExpertsSplitOverTwoGpusExchangeTheirTokensAsOnTheCpuBackend) {
  TANDEM_REQUIRE_GPU();
  if (cuda_device_count() < 2) GTEST_SKIP() << "fewer than two CUDA devices";
  if (std::system("command -v mpirun >/dev/null 2>&1") != 0) GTEST_SKIP() << "no mpirun";
  const std::string path = cli_test::write_in_fresh_dir(
      "tandem-cuda-moe", "ep2", "moe.yaml",
      "name: cuda-moe-ep2\n"
      "model: {name: gpt-tiny-moe, num_layers: 2, hidden_size: 64, num_attention_heads: 4, vocab_size: 256,\n"
      "        seq_length: 32, bias: false, num_moe_experts: 4, moe_router_topk: 2, moe_expert_capacity_factor: 1.0,\n"
      "        moe_aux_loss_coeff: 0.01, hidden_dropout: 0, attention_dropout: 0}\n"
      "cluster: localhost\n"
      "training: {global_batch_size: 8, micro_batch_size: 2, seq_length: 32, precision: fp32, lr: 0.001}\n"
      "strategy: {type: hybrid, data_parallel_size: 2, expert_model_parallel_size: 2}\n");
  const testing::CpuAndGpus r = testing::expect_gpus_train_as_the_cpu(path, 3, 2);
  if (r.on_gpus.status == 0) EXPECT_TRUE(nlohmann::json::parse(r.on_gpus.out).contains("moe_router_load")) << r.on_gpus.out;
}

}  // namespace
}  // namespace tandem::exec::cuda
