// Gradient compression on the CUDA backend end to end: the small GPT of the CPU equivalence
// tests, trained with each codec (strategies/compression/) on the data-parallel all-reduce, gives
// the CPU backend's losses step for step at the fp32 equivalence tolerance of cuda_run_test.cpp,
// and the codec's own steps are in the measured trace. One rank (a one-member group still
// encodes, exchanges and decodes every bucket), so one GPU suffices; skipped with fewer GPUs than
// ranks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "exec/cpu/cpu_run.hpp"
#include "exec/cuda/cuda_run.hpp"
#include "tests/exec/cpu/hybrid_shape.hpp"
#include "tests/kernels/cuda/cuda_test_support.hpp"

namespace tandem::exec::cuda {
namespace {

constexpr double kLossTolerance = 1e-4;  // relative, per iteration (cuda_run_test.cpp's)

struct CodecCase {
  const char* name;
  Compression type;
  const char* step;  // the label suffix of one of the codec's own ops
  double topk_ratio = 0.01;
  int rank = 1;
};

bool has_op_ending(const cpu::RunResult& run, const std::string& suffix) {
  return std::any_of(run.trace.records.begin(), run.trace.records.end(), [&](const TraceRecord& r) {
    return r.op_id.size() > suffix.size() && r.op_id.compare(r.op_id.size() - suffix.size(), suffix.size(), suffix) == 0;
  });
}

TEST(CudaCompression, EveryCodecTrainsAsOnTheCpuBackend) {
  TANDEM_REQUIRE_GPU();
  const auto model = cpu::testing::small_gpt("gpt-codec-cuda-test", 2, 64, 4, 256, 32);
  cpu::testing::HybridShape shape;  // one rank
  if (cuda_device_count() < shape.world_size())
    GTEST_SKIP() << "fewer GPUs than the strategy's " << shape.world_size() << " rank(s)";
  TrainingConfig training;
  training.seq_length = 32;
  training.lr = 1e-3f;
  cpu::RunOptions o;
  o.iterations = 3;
  cpu::configure_for_model(o, *model, 32);
  o.timeout_s = 60;
  CudaRunExtras extras;
  extras.math = kernels::cuda::MathMode::fp32;
  for (const CodecCase& c :
       {CodecCase{"fp16", Compression::fp16, "unpack"}, CodecCase{"bf16", Compression::bf16, "unpack"},
        CodecCase{"int8", Compression::int8, "requantize"}, CodecCase{"onebit", Compression::one_bit, "dequantize_sum"},
        CodecCase{"topk", Compression::top_k, "scatter_sum", 0.05},
        CodecCase{"powerSGD", Compression::power_sgd, "orthogonalize", 0.01, 2}}) {
    shape.compression.type = c.type;
    shape.compression.topk_ratio = c.topk_ratio;
    shape.compression.matrix_approximation_rank = c.rank;
    const auto strategy = cpu::testing::make_hybrid(model, shape, training, 30'000);  // several buckets
    const cpu::RunResult reference = cpu::run_cpu(*strategy, o);
    const cpu::RunResult gpu = run_cuda(*strategy, o, extras);
    ASSERT_EQ(gpu.iterations.size(), reference.iterations.size()) << c.name;
    for (std::size_t i = 0; i < gpu.iterations.size(); ++i)
      EXPECT_NEAR(gpu.iterations[i].loss, reference.iterations[i].loss,
                  kLossTolerance * std::abs(reference.iterations[i].loss))
          << c.name << ", iteration " << i;
    EXPECT_TRUE(has_op_ending(gpu, std::string(".") + c.step)) << c.name << ": no ." << c.step << " op in the GPU's trace";
  }
}

}  // namespace
}  // namespace tandem::exec::cuda
