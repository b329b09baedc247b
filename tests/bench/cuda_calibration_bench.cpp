// The measurements `tandem calibrate --backend cuda` fits a GPU profile to, as a benchmark the GPU
// check runs (tests/gpu/check.sh): CudaMicrobenchmarks (exec/cuda/microbenchmarks.hpp) times bf16
// GEMMs over sizes (compute-bound efficiency) and device-to-device copies (memory bandwidth
// efficiency) with CUDA events. Counters: tflops / gb_per_s achieved, and the fraction of the
// H200 profile's peak (platforms/devices/h200-sxm.yaml: 989 TFLOP/s bf16, 4800 GB/s), the
// numbers its `efficiency:` block holds. Skipped without a GPU.
#include <benchmark/benchmark.h>

#include "exec/cuda/cuda_run.hpp"
#include "exec/cuda/microbenchmarks.hpp"

namespace {

constexpr double kH200Bf16Flops = 989e12;
constexpr double kH200BytesPerS = 4800e9;

void BM_CalibrateGemm(benchmark::State& state) {
  if (tandem::exec::cuda::cuda_device_count() < 1) {
    state.SkipWithError("no CUDA device");
    return;
  }
  tandem::exec::cuda::CudaMicrobenchmarks bench;
  const std::int64_t n = state.range(0);
  double s = 0;
  for (auto _ : state) {
    s = bench.gemm_seconds(n, n, n);
    state.SetIterationTime(s);
  }
  const double flops_per_s = 2.0 * n * n * n / s;
  state.counters["tflops"] = flops_per_s / 1e12;
  state.counters["fraction_of_peak"] = flops_per_s / kH200Bf16Flops;
}
BENCHMARK(BM_CalibrateGemm)->RangeMultiplier(2)->Range(512, 8192)->UseManualTime()->Iterations(1);

void BM_CalibrateCopy(benchmark::State& state) {
  if (tandem::exec::cuda::cuda_device_count() < 1) {
    state.SkipWithError("no CUDA device");
    return;
  }
  tandem::exec::cuda::CudaMicrobenchmarks bench;
  const std::int64_t bytes = state.range(0) << 20;
  double s = 0;
  for (auto _ : state) {
    s = bench.copy_seconds(bytes);
    state.SetIterationTime(s);
  }
  const double moved_per_s = 2.0 * static_cast<double>(bytes) / s;  // read + write
  state.counters["gb_per_s"] = moved_per_s / 1e9;
  state.counters["fraction_of_peak"] = moved_per_s / kH200BytesPerS;
}
BENCHMARK(BM_CalibrateCopy)->RangeMultiplier(4)->Range(1, 1024)->UseManualTime()->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
