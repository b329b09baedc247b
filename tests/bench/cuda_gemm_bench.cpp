// GEMM throughput of the CUDA backend's cuBLASLt path (kernels/cuda/gemm.cuh, row-major fp32
// storage, bf16 tensor-core math) as a fraction of cuBLAS's best for the same shape: cublasGemmEx
// with native bf16 operands and fp32 accumulation, the default heuristic (what PyTorch calls),
// timed in the same process. Counters: tflops (ours), reference_tflops, ratio = ours / reference.
// Shapes: GPT-2 124M's and 1.5B's layer GEMMs at 8192 tokens, and a square 8192³. Skipped
// (with an error line) without a GPU.
#include <benchmark/benchmark.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <functional>
#include <vector>

#include "exec/cuda/cuda_run.hpp"
#include "kernels/cuda/check.hpp"
#include "kernels/cuda/gemm.cuh"

namespace {

using tandem::kernels::cuda::Blas;
using tandem::kernels::cuda::MathMode;

// Median seconds of `fn` over `repeats` runs, timed with events on `stream`.
double time_s(const std::function<void()>& fn, cudaStream_t stream, int repeats = 20) {
  cudaEvent_t a, b;
  CUDA_CHECK(cudaEventCreate(&a));
  CUDA_CHECK(cudaEventCreate(&b));
  for (int i = 0; i < 3; ++i) fn();
  std::vector<float> ms;
  for (int i = 0; i < repeats; ++i) {
    CUDA_CHECK(cudaEventRecord(a, stream));
    fn();
    CUDA_CHECK(cudaEventRecord(b, stream));
    CUDA_CHECK(cudaEventSynchronize(b));
    float t = 0;
    CUDA_CHECK(cudaEventElapsedTime(&t, a, b));
    ms.push_back(t);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
  return ms[ms.size() / 2] * 1e-3;
}

void BM_CudaGemmVsCublas(benchmark::State& state) {
  if (tandem::exec::cuda::cuda_device_count() < 1) {
    state.SkipWithError("no CUDA device");
    return;
  }
  const std::int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  const double flops = 2.0 * m * n * k;
  float *a, *b, *c;
  void *a16, *b16, *c16;
  CUDA_CHECK(cudaMalloc(&a, sizeof(float) * m * k));
  CUDA_CHECK(cudaMalloc(&b, sizeof(float) * k * n));
  CUDA_CHECK(cudaMalloc(&c, sizeof(float) * m * n));
  CUDA_CHECK(cudaMalloc(&a16, 2 * m * k));
  CUDA_CHECK(cudaMalloc(&b16, 2 * k * n));
  CUDA_CHECK(cudaMalloc(&c16, 2 * m * n));
  CUDA_CHECK(cudaMemset(a, 0, sizeof(float) * m * k));
  CUDA_CHECK(cudaMemset(b, 0, sizeof(float) * k * n));
  CUDA_CHECK(cudaMemset(a16, 0, 2 * m * k));
  CUDA_CHECK(cudaMemset(b16, 0, 2 * k * n));
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreate(&stream));
  Blas blas(MathMode::bf16);
  cublasHandle_t handle;
  CUBLAS_CHECK(cublasCreate(&handle));
  CUBLAS_CHECK(cublasSetStream(handle, stream));
  double ours = 0, reference = 0;
  for (auto _ : state) {
    ours = time_s([&] { blas.gemm_dense(c, a, b, m, n, k, false, false, false, 1, stream); }, stream);
    const float one = 1.0f, zero = 0.0f;
    // Row-major C = A·B as column-major Cᵀ = Bᵀ·Aᵀ.
    reference = time_s(
        [&] {
          CUBLAS_CHECK(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m),
                                    static_cast<int>(k), &one, b16, CUDA_R_16BF, static_cast<int>(n), a16, CUDA_R_16BF,
                                    static_cast<int>(k), &zero, c16, CUDA_R_16BF, static_cast<int>(n),
                                    CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
        },
        stream);
    state.SetIterationTime(ours);
  }
  state.counters["tflops"] = flops / ours / 1e12;
  state.counters["reference_tflops"] = flops / reference / 1e12;
  state.counters["ratio"] = reference / ours;
  cublasDestroy(handle);
  cudaStreamDestroy(stream);
  for (void* p : {static_cast<void*>(a), static_cast<void*>(b), static_cast<void*>(c), a16, b16, c16}) cudaFree(p);
}
BENCHMARK(BM_CudaGemmVsCublas)
    ->Args({8192, 2304, 768})    // GPT-2 124M qkv
    ->Args({8192, 3072, 768})    // GPT-2 124M mlp up
    ->Args({8192, 768, 3072})    // GPT-2 124M mlp down
    ->Args({4096, 6400, 1600})   // GPT-2 1.5B mlp up
    ->Args({8192, 8192, 8192})   // square
    ->UseManualTime()
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
