// The CUDA backend starts every strategy from the CPU backend's weights: after setup, each rank's
// parameters and optimizer state (fp32 masters included) on a CudaDevice are bit for bit those
// of a CpuDevice of the same rank (placements: tensor-parallel shards, ZeRO partitions, the
// last pipeline stage's tied table). Setup issues no communication, so every rank of a
// multi-rank strategy is checked on the one GPU. Then a one-GPU ZeRO-3 run with fp32 masters
// (one-member out-of-place gathers and reduce-scatters, masters from place()) trains the CPU
// backend's numbers. Skipped without a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <string>

#include "exec/cpu/cpu_device.hpp"
#include "exec/cpu/cpu_run.hpp"
#include "exec/cuda/cuda_device.hpp"
#include "exec/cuda/cuda_run.hpp"
#include "strategies/models/transformer.hpp"
#include "tests/exec/cpu/hybrid_shape.hpp"
#include "tests/exec/cuda/parameter_agreement.hpp"
#include "tests/kernels/cuda/cuda_test_support.hpp"

namespace tandem::exec::cuda {
namespace {

using Shape = cpu::testing::HybridShape;
const std::set<MemCategory> kState{MemCategory::parameters, MemCategory::optimizer_state};
constexpr std::uint64_t kSeed = 99;

// The vocabulary is not a multiple of tp: padded rows start at 0.
constexpr float kLr = 1e-3f;  // AdamW's step size in these runs

std::shared_ptr<const Model> small_gpt() { return cpu::testing::small_gpt("gpt-placement-test", 2, 64, 4, 250, 16); }

std::unique_ptr<HybridParallel> hybrid(const Shape& s) {
  TrainingConfig training;
  training.seq_length = 16;
  training.lr = kLr;
  return cpu::testing::make_hybrid(small_gpt(), s, training, /*bucket_params=*/20'000);
}

// A rank's state keyed by logical tensor and where its part sits.
std::map<std::string, std::vector<float>> by_place(const std::vector<cpu::PlacedTensor>& tensors) {
  std::map<std::string, std::vector<float>> out;
  for (const cpu::PlacedTensor& t : tensors) {
    std::string key = t.placement.name + " @" + std::to_string(t.placement.flat_offset);
    for (const auto& [begin, length] : t.placement.segments) key += " " + std::to_string(begin) + "+" + std::to_string(length);
    EXPECT_TRUE(out.emplace(key, t.values).second) << "two tensors at " << key;
  }
  return out;
}

class CudaPlacement : public ::testing::TestWithParam<Shape> {};

TEST_P(CudaPlacement, EveryRankStartsFromTheCpuBackendsValues) {
  TANDEM_REQUIRE_GPU();
  const auto strategy = hybrid(GetParam());
  const int world = strategy->world_size();
  cpu::DeviceSettings cpu_settings;
  cpu_settings.seed = kSeed;
  CudaSettings cuda_settings;
  cuda_settings.seed = kSeed;
  cuda_settings.init_std = cpu_settings.init_std;
  for (int r = 0; r < world; ++r) {
    cpu::CpuRunContext context(world, cpu_settings);
    cpu::CpuDevice host(r, context);
    strategy->program_for(r)->setup(host);
    CudaDevice gpu(r, world, cuda_settings, /*bootstrap=*/nullptr);
    strategy->program_for(r)->setup(gpu);
    const auto want = by_place(host.placed_snapshot(kState));
    const auto got = by_place(gpu.placed_snapshot(kState));
    ASSERT_EQ(got.size(), want.size()) << "rank " << r;
    for (const auto& [key, values] : want) {
      auto it = got.find(key);
      ASSERT_NE(it, got.end()) << "rank " << r << ": " << key;
      EXPECT_EQ(it->second, values) << "rank " << r << ": " << key;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    CudaStrategies, CudaPlacement,  // 'Cuda*': the GPU check's filter (tests/gpu/check.sh)
    ::testing::Values(Shape{.name = "tp2_sp", .tp = 2, .sp = true},
                      Shape{.name = "zero3_dp2_masters", .dp = 2, .zero = 3, .precision = DType::bf16},
                      Shape{.name = "tp2_pp2_zero1_masters", .tp = 2, .pp = 2, .zero = 1, .precision = DType::bf16}),
    [](const auto& info) { return info.param.name; });

TEST(CudaPlacementRun, OneGpuZeroThreeWithMastersTrainsTheCpuBackendsNumbers) {
  TANDEM_REQUIRE_GPU();
  const auto strategy =
      hybrid(Shape{.name = "zero3", .zero = 3, .precision = DType::bf16});
  cpu::RunOptions o;
  o.iterations = 3;
  o.seed = kSeed;
  cpu::configure_for_model(o, *small_gpt(), 16);
  o.capture_parameters = true;
  o.record_trace = false;
  o.timeout_s = 60;
  const cpu::RunResult want = cpu::run_cpu(*strategy, o);
  CudaRunExtras extras;
  extras.math = kernels::cuda::MathMode::fp32;  // the CPU backend computes in fp32 whatever the precision
  const cpu::RunResult got = run_cuda(*strategy, o, extras);
  ASSERT_EQ(got.iterations.size(), want.iterations.size());
  for (std::size_t i = 0; i < want.iterations.size(); ++i)
    EXPECT_NEAR(got.iterations[i].loss, want.iterations[i].loss, 1e-4 * std::abs(want.iterations[i].loss)) << i;
  testing::expect_parameters_agree(got.global_parameters, want.global_parameters, 1e-3, kLr,
                                   o.iterations);
}

}  // namespace
}  // namespace tandem::exec::cuda
