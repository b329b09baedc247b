// The CUDA backend end to end (exec/cuda/cuda_run.hpp) against the CPU backend: k training
// steps of a small GPT in fp32 give the same losses and parameters (stated tolerance); bf16
// training's loss curve tracks fp32's; the measured trace carries exactly the CPU backend's op
// ids (which are the simulator's, tests/exec/cpu); the caching allocator reports a peak that
// covers the ledger's and stops calling cudaMalloc once warm. Skipped without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "exec/cpu/cpu_run.hpp"
#include "exec/cuda/caching_allocator.hpp"
#include "exec/cuda/cuda_run.hpp"
#include "strategies/data_parallel.hpp"
#include "strategies/models/presets.hpp"
#include "strategies/models/transformer.hpp"
#include "tests/exec/cuda/parameter_agreement.hpp"
#include "tests/kernels/cuda/cuda_test_support.hpp"

namespace tandem::exec::cuda {
namespace {

// Parameters after k steps: fp32 GPU vs CPU, max |a − b| / (max |b|) per tensor.
constexpr double kParameterTolerance = 1e-3;
constexpr float kLr = 1e-3f;  // AdamW's step size in these runs
constexpr double kLossTolerance = 1e-4;      // relative, per iteration
constexpr double kBf16LossTolerance = 0.03;  // relative, bf16 vs fp32 loss per iteration

std::unique_ptr<DataParallel> gpt_tiny_dp1(DType precision) {
  TrainingConfig training;
  training.global_batch_size = 4;
  training.micro_batch_size = 2;
  training.seq_length = 32;
  training.precision = precision;
  training.lr = kLr;
  ParallelConfig parallel;
  parallel.data_parallel_size = 1;
  return std::make_unique<DataParallel>(std::make_shared<TransformerModel>(transformer_preset("gpt-tiny")), training,
                                        parallel, std::vector<double>{});
}

cpu::RunOptions options_for(const Strategy&, int iterations) {
  cpu::RunOptions o;
  o.iterations = iterations;
  TransformerModel model(transformer_preset("gpt-tiny"));
  cpu::configure_for_model(o, model, 32);
  o.capture_parameters = true;
  o.timeout_s = 60;
  return o;
}

TEST(CudaRun, Fp32TrainingMatchesTheCpuBackendStepForStep) {
  TANDEM_REQUIRE_GPU();
  auto strategy = gpt_tiny_dp1(DType::fp32);
  const cpu::RunOptions o = options_for(*strategy, 3);
  const cpu::RunResult reference = cpu::run_cpu(*strategy, o);
  CudaRunExtras extras;
  extras.math = kernels::cuda::MathMode::fp32;
  const cpu::RunResult gpu = run_cuda(*strategy, o, extras);
  ASSERT_EQ(gpu.iterations.size(), reference.iterations.size());
  for (std::size_t i = 0; i < gpu.iterations.size(); ++i)
    EXPECT_NEAR(gpu.iterations[i].loss, reference.iterations[i].loss,
                kLossTolerance * std::abs(reference.iterations[i].loss))
        << "iteration " << i;
  ASSERT_EQ(gpu.parameters.size(), 1u);
  testing::expect_parameters_agree(gpu.parameters[0], reference.parameters[0], kParameterTolerance,
                                   kLr, o.iterations);
}

// Checkpoints on the CUDA backend, in the CPU backend's format: a run saved after 2 iterations
// and resumed for 2 more gives the uninterrupted 4-iteration run's losses (the same kernels on the
// same GPU: bit for bit expected, compared at the equivalence tolerance), and the checkpoint a
// GPU wrote resumes on the CPU backend too.
TEST(CudaRun, ACheckpointResumesWhereTheRunStoppedOnTheGpuAndOnTheCpu) {
  TANDEM_REQUIRE_GPU();
  auto strategy = gpt_tiny_dp1(DType::fp32);
  CudaRunExtras extras;
  extras.math = kernels::cuda::MathMode::fp32;
  const cpu::RunResult whole = run_cuda(*strategy, options_for(*strategy, 4), extras);
  const std::string path = ::testing::TempDir() + "tandem-cuda-checkpoint.bin";
  cpu::RunOptions first = options_for(*strategy, 2);
  first.checkpoint_path = path;
  run_cuda(*strategy, first, extras);
  cpu::RunOptions rest = options_for(*strategy, 2);
  rest.resume_path = path;
  const cpu::RunResult resumed = run_cuda(*strategy, rest, extras);
  ASSERT_EQ(resumed.first_iteration, 2);
  ASSERT_EQ(resumed.iterations.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i)
    EXPECT_NEAR(resumed.iterations[i].loss, whole.iterations[i + 2].loss, kLossTolerance * std::abs(whole.iterations[i + 2].loss))
        << "iteration " << i + 2;
  const cpu::RunResult on_cpu = cpu::run_cpu(*strategy, rest);
  EXPECT_NEAR(on_cpu.iterations[0].loss, whole.iterations[2].loss, kLossTolerance * std::abs(whole.iterations[2].loss));
}

TEST(CudaRun, Bf16LossCurveTracksFp32) {
  TANDEM_REQUIRE_GPU();
  auto strategy = gpt_tiny_dp1(DType::fp32);  // same parameters and data; only the GEMM math differs
  const cpu::RunOptions o = options_for(*strategy, 6);
  CudaRunExtras fp32, bf16;
  fp32.math = kernels::cuda::MathMode::fp32;
  bf16.math = kernels::cuda::MathMode::bf16;
  const cpu::RunResult a = run_cuda(*strategy, o, fp32);
  const cpu::RunResult b = run_cuda(*strategy, o, bf16);
  for (std::size_t i = 0; i < a.iterations.size(); ++i)
    EXPECT_NEAR(b.iterations[i].loss, a.iterations[i].loss, kBf16LossTolerance * std::abs(a.iterations[i].loss))
        << "iteration " << i;
  EXPECT_LT(b.iterations.back().loss, b.iterations.front().loss);  // it trains
}

TEST(CudaRun, TraceCarriesTheCpuBackendsOpIds) {
  TANDEM_REQUIRE_GPU();
  auto strategy = gpt_tiny_dp1(DType::fp32);
  cpu::RunOptions o = options_for(*strategy, 1);
  o.capture_parameters = false;
  const cpu::RunResult reference = cpu::run_cpu(*strategy, o);
  CudaRunExtras extras;
  const cpu::RunResult gpu = run_cuda(*strategy, o, extras);
  EXPECT_EQ(gpu.trace.source, "cuda");
  // The same ops (by id); their order differs only where streams overlap.
  std::vector<std::string> a, b;
  for (const TraceRecord& r : gpu.trace.records) {
    a.push_back(r.op_id);
    EXPECT_LE(r.start_s, r.end_s) << r.op_id;
  }
  for (const TraceRecord& r : reference.trace.records) b.push_back(r.op_id);
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  EXPECT_EQ(a, b);
}

TEST(CudaRun, AllocatorPeakCoversTheLedgerAndCachesAcrossIterations) {
  TANDEM_REQUIRE_GPU();
  auto strategy = gpt_tiny_dp1(DType::fp32);
  cpu::RunOptions o = options_for(*strategy, 3);
  CudaRunExtras extras;
  const cpu::RunResult gpu = run_cuda(*strategy, o, extras);
  // Every tensor is fp32 storage of at least its declared bytes.
  EXPECT_GE(extras.peak_allocated_bytes, static_cast<std::size_t>(gpu.ranks.at(0).peak_memory_bytes));
  EXPECT_GE(extras.peak_reserved_bytes, extras.peak_allocated_bytes);
}

TEST(CachingAllocator, ReusesFreedBlocksAndTracksPeaks) {
  TANDEM_REQUIRE_GPU();
  CachingAllocator a;
  void* p = a.allocate(3 << 20);
  void* q = a.allocate(1000);
  EXPECT_EQ(a.in_use_bytes(), CachingAllocator::rounded_size(3 << 20) + CachingAllocator::rounded_size(1000));
  a.free(p);
  void* r = a.allocate((3 << 20) - 4096);  // same rounded block: served from the cache
  EXPECT_EQ(r, p);
  EXPECT_EQ(a.device_allocations(), 2u);
  a.free(q);
  a.free(r);
  EXPECT_EQ(a.in_use_bytes(), 0u);
  EXPECT_EQ(a.peak_in_use_bytes(), CachingAllocator::rounded_size(3 << 20) + CachingAllocator::rounded_size(1000));
  a.empty_cache();
  EXPECT_EQ(a.reserved_bytes(), 0u);
}

TEST(CachingAllocator, RoundsSmallAndLargeRequestsToTheirGranules) {
  EXPECT_EQ(CachingAllocator::rounded_size(1), 512u);
  EXPECT_EQ(CachingAllocator::rounded_size(513), 1024u);
  EXPECT_EQ(CachingAllocator::rounded_size((1 << 20) + 1), 2u << 20);
}

}  // namespace
}  // namespace tandem::exec::cuda
