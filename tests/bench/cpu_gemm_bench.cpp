// GEMM throughput of the CPU reference kernel (kernels::cpu::gemm_forward) against cblas_sgemm
// called directly on the same shapes and buffers, measured in the same run: each iteration times
// both (alternating which goes first), so the ratio is immune to machine load drifting between
// separate benchmarks. The reported time is ours; counters:
//   ours_GFLOPs, blas_GFLOPs   2·m·n·k / time
//   ratio                      ours / BLAS throughput (1.0 = no overhead over raw CBLAS)
// Shapes: squares, and a GPT-2-small MLP (h = 768, ffn = 3072) on 1024 tokens (a 4096-token
// batch scaled down 4x): fc1 forward (NN), its input gradient (NT) and its weight gradient
// (TN, accumulated).
#include <benchmark/benchmark.h>

#include <chrono>
#include <vector>

#include "kernels/cpu/gemm.hpp"
#include "kernels/cpu/openblas.hpp"  // cblas_sgemm as the kernel itself reaches it

namespace {

using Clock = std::chrono::steady_clock;

enum Mode : int { kNN = 0, kNT = 1, kTNAccumulate = 2 };

void BM_CpuGemm(benchmark::State& state) {
  const std::int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  const int mode = static_cast<int>(state.range(3));
  const bool ta = mode == kTNAccumulate, tb = mode == kNT, acc = mode == kTNAccumulate;
  std::vector<float> a(static_cast<std::size_t>(m * k)), b(static_cast<std::size_t>(k * n)),
      c(static_cast<std::size_t>(m * n), 0.0f);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>((i * 7919) % 1000) * 1e-3f;
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>((i * 104729) % 1000) * 1e-3f;
  const int lda = static_cast<int>(ta ? m : k), ldb = static_cast<int>(tb ? k : n);

  auto ours = [&] {
    tandem::kernels::cpu::gemm_forward(c.data(), a.data(), b.data(), m, n, k, ta, tb, acc);
  };
  auto blas = [&] {
    tandem::kernels::cpu::openblas().sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                                           static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), 1.0f, a.data(),
                                           lda, b.data(), ldb, acc ? 1.0f : 0.0f, c.data(), static_cast<int>(n));
  };
  ours();  // warm up both (thread pool start, page faults)
  blas();

  double ours_s = 0.0, blas_s = 0.0;
  std::int64_t iter = 0;
  for (auto _ : state) {
    double t_ours, t_blas;
    if (iter++ % 2 == 0) {
      const auto t0 = Clock::now();
      ours();
      const auto t1 = Clock::now();
      blas();
      const auto t2 = Clock::now();
      t_ours = std::chrono::duration<double>(t1 - t0).count();
      t_blas = std::chrono::duration<double>(t2 - t1).count();
    } else {
      const auto t0 = Clock::now();
      blas();
      const auto t1 = Clock::now();
      ours();
      const auto t2 = Clock::now();
      t_blas = std::chrono::duration<double>(t1 - t0).count();
      t_ours = std::chrono::duration<double>(t2 - t1).count();
    }
    benchmark::DoNotOptimize(c.data());
    ours_s += t_ours;
    blas_s += t_blas;
    state.SetIterationTime(t_ours);
  }
  const double flops = 2.0 * static_cast<double>(m) * n * k * static_cast<double>(iter);
  state.counters["ours_GFLOPs"] = flops / ours_s * 1e-9;
  state.counters["blas_GFLOPs"] = flops / blas_s * 1e-9;
  state.counters["ratio"] = blas_s / ours_s;
}

BENCHMARK(BM_CpuGemm)
    ->ArgNames({"m", "n", "k", "mode"})
    ->Args({256, 256, 256, kNN})
    ->Args({512, 512, 512, kNN})
    ->Args({1024, 1024, 1024, kNN})
    ->Args({1024, 3072, 768, kNN})           // fc1 forward
    ->Args({1024, 768, 3072, kNT})           // fc1 input gradient
    ->Args({768, 3072, 1024, kTNAccumulate})  // fc1 weight gradient
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
