// GEMM throughput of the CUDA backend's cuBLASLt path (kernels/cuda/gemm.cuh, row-major fp32
// storage, bf16 tensor-core math) as a fraction of cuBLAS's best for the same shape: cublasGemmEx
// with native bf16 operands and fp32 accumulation, the default heuristic (what PyTorch calls),
// timed in the same process. Counters: tflops (ours), reference_tflops, ratio = ours / reference.
// Shapes: GPT-2 124M's and 1.5B's layer GEMMs at 8192 tokens, and a square 8192³.
// BM_CublasVsKernelModel times cuBLAS alone over GPT layer shapes (hidden 1024-12288, tensor
// parallel slices, LM heads) beside what the simulator's GEMM model (sim/gpu_kernel_model.hpp)
// says for this GPU's bundled profile: counters cublas_tflops, model_tflops, model_error.
// Operands hold random values: on zeros a GPU draws less power and clocks higher (an H200's
// 8192³ ran at 894 TFLOP/s on zeros, 788 on random data: device/KINDS.md). Skipped (with an error
// line) without a GPU.
#include <benchmark/benchmark.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <vector>

#include "exec/cuda/cuda_run.hpp"
#include "kernels/cuda/check.hpp"
#include "kernels/cuda/gemm.cuh"
#include "platforms/device.hpp"
#include "sim/gpu_kernel_model.hpp"

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

// `count` uniform values in [-1, 1) (a fixed LCG: the same operands every run), as fp32 or bf16.
std::vector<float> random_floats(std::int64_t count, std::uint64_t seed) {
  std::vector<float> v(static_cast<std::size_t>(count));
  for (float& x : v) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    x = static_cast<float>(static_cast<double>(seed >> 40) / static_cast<double>(1ull << 24) * 2.0 - 1.0);
  }
  return v;
}
void upload_random(float* device, std::int64_t count, std::uint64_t seed) {
  const std::vector<float> v = random_floats(count, seed);
  CUDA_CHECK(cudaMemcpy(device, v.data(), sizeof(float) * v.size(), cudaMemcpyHostToDevice));
}
void upload_random_bf16(void* device, std::int64_t count, std::uint64_t seed) {
  const std::vector<float> v = random_floats(count, seed);
  std::vector<__nv_bfloat16> h(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) h[i] = __float2bfloat16(v[i]);
  CUDA_CHECK(cudaMemcpy(device, h.data(), sizeof(__nv_bfloat16) * h.size(), cudaMemcpyHostToDevice));
}

// Row-major C[m,n] = A[m,k]·B[k,n] in bf16 with fp32 accumulation (cuBLAS column-major: Cᵀ = Bᵀ·Aᵀ).
void cublas_bf16(cublasHandle_t handle, std::int64_t m, std::int64_t n, std::int64_t k, const void* a, const void* b,
                 void* c) {
  const float one = 1.0f, zero = 0.0f;
  CUBLAS_CHECK(cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m),
                            static_cast<int>(k), &one, b, CUDA_R_16BF, static_cast<int>(n), a, CUDA_R_16BF,
                            static_cast<int>(k), &zero, c, CUDA_R_16BF, static_cast<int>(n), CUBLAS_COMPUTE_32F,
                            CUBLAS_GEMM_DEFAULT));
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
  upload_random(a, m * k, 1);
  upload_random(b, k * n, 2);
  upload_random_bf16(a16, m * k, 1);
  upload_random_bf16(b16, k * n, 2);
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreate(&stream));
  Blas blas(MathMode::bf16);
  cublasHandle_t handle;
  CUBLAS_CHECK(cublasCreate(&handle));
  CUBLAS_CHECK(cublasSetStream(handle, stream));
  double ours = 0, reference = 0;
  for (auto _ : state) {
    ours = time_s([&] { blas.gemm_dense(c, a, b, m, n, k, false, false, false, 1, stream); }, stream);
    reference = time_s([&] { cublas_bf16(handle, m, n, k, a16, b16, c16); }, stream);
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

void BM_CublasVsKernelModel(benchmark::State& state) {
  if (tandem::exec::cuda::cuda_device_count() < 1) {
    state.SkipWithError("no CUDA device");
    return;
  }
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  const std::string profile = tandem::bundled_profile_of_gpu(prop.name);
  if (profile.empty()) {
    state.SkipWithError("no bundled profile for this GPU");
    return;
  }
  const tandem::DeviceProfile device = tandem::find_device_profile(profile);
  const std::int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  const double flops = 2.0 * m * n * k;
  void *a16, *b16, *c16;
  CUDA_CHECK(cudaMalloc(&a16, 2 * m * k));
  CUDA_CHECK(cudaMalloc(&b16, 2 * k * n));
  CUDA_CHECK(cudaMalloc(&c16, 2 * m * n));
  upload_random_bf16(a16, m * k, 3);
  upload_random_bf16(b16, k * n, 4);
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreate(&stream));
  cublasHandle_t handle;
  CUBLAS_CHECK(cublasCreate(&handle));
  CUBLAS_CHECK(cublasSetStream(handle, stream));
  double measured = 0;
  for (auto _ : state) {
    measured = time_s([&] { cublas_bf16(handle, m, n, k, a16, b16, c16); }, stream);
    state.SetIterationTime(measured);
  }
  const tandem::Bytes bytes = 2 * (m * k + k * n + m * n);
  const tandem::sim::gpu::GemmPlan plan =
      tandem::sim::gpu::plan_gemm(m, n, k, 1, bytes, tandem::DType::bf16, device);
  state.counters["cublas_tflops"] = flops / measured / 1e12;
  state.counters["model_tflops"] = flops / plan.seconds() / 1e12;
  state.counters["model_error"] = measured / plan.seconds() - 1;  // + : the model is too fast
  state.SetLabel(profile);
  cublasDestroy(handle);
  cudaStreamDestroy(stream);
  for (void* p : {a16, b16, c16}) cudaFree(p);
}
// GPT layers at 8192 tokens: qkv [T, 3h, h], attention projection [T, h, h], MLP up [T, 4h, h] and
// down [T, h, 4h]; GPT-3 175B's tensor-parallel-8 slices; LM heads of GPT-2 and Llama 2.
void gpt_layer_shapes(benchmark::internal::Benchmark* b) {
  const std::int64_t t = 8192;
  for (std::int64_t h : {1024, 2048, 4096, 8192, 12288}) {
    b->Args({t, 3 * h, h})->Args({t, h, h})->Args({t, 4 * h, h})->Args({t, h, 4 * h});
  }
  b->Args({t, 4608, 12288})->Args({t, 12288, 1536})->Args({t, 6144, 12288})->Args({t, 12288, 6144});
  b->Args({t, 50257, 768})->Args({t, 32000, 4096});
}
BENCHMARK(BM_CublasVsKernelModel)->Apply(gpt_layer_shapes)->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
