#include "exec/cuda/microbenchmarks.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <unordered_map>
#include <vector>

#include "kernels/cuda/check.hpp"
#include "kernels/cuda/dispatch.hpp"

namespace tandem::exec::cuda {

struct CudaMicrobenchmarks::State {
  cudaStream_t stream = nullptr;
  std::unique_ptr<kernels::cuda::Blas> blas;
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
  cudaEvent_t start = nullptr, end = nullptr;
};

CudaMicrobenchmarks::CudaMicrobenchmarks(kernels::cuda::MathMode math, int device) : state_(std::make_unique<State>()) {
  CUDA_CHECK(cudaSetDevice(device));
  CUDA_CHECK(cudaStreamCreateWithFlags(&state_->stream, cudaStreamNonBlocking));
  state_->blas = std::make_unique<kernels::cuda::Blas>(math);
  CUDA_CHECK(cudaEventCreate(&state_->start));
  CUDA_CHECK(cudaEventCreate(&state_->end));
}

CudaMicrobenchmarks::~CudaMicrobenchmarks() {
  cudaStreamSynchronize(state_->stream);
  state_->blas.reset();
  if (state_->workspace) cudaFree(state_->workspace);
  cudaEventDestroy(state_->start);
  cudaEventDestroy(state_->end);
  cudaStreamDestroy(state_->stream);
}

double CudaMicrobenchmarks::with_op(const ComputeOp& op, const std::function<double(const std::function<void()>&)>& body) {
  State& st = *state_;
  // Tensors: one device buffer per distinct tensor id, small values (ids: 0).
  std::unordered_map<int, float*> buffers;
  auto cleanup = [&] {
    cudaStreamSynchronize(st.stream);
    for (auto& [id, p] : buffers) cudaFree(p);
  };
  try {
    for (const auto* list : {&op.inputs, &op.outputs})
      for (const Tensor& t : *list) {
        if (!t.valid() || buffers.count(t.id)) continue;
        float* p = nullptr;
        const std::size_t n = static_cast<std::size_t>(std::max<std::int64_t>(t.numel(), 1));
        CUDA_CHECK(cudaMalloc(&p, sizeof(float) * n));
        buffers[t.id] = p;
        if (t.dtype == DType::int32) {
          CUDA_CHECK(cudaMemsetAsync(p, 0, sizeof(float) * n, st.stream));
        } else {
          std::vector<float> host(n);
          for (std::size_t i = 0; i < n; ++i) host[i] = 0.01f * static_cast<float>(static_cast<int>(i % 97) - 48);
          CUDA_CHECK(cudaMemcpyAsync(p, host.data(), sizeof(float) * n, cudaMemcpyHostToDevice, st.stream));
        }
      }
    kernels::cuda::RunOptions options;
    options.hidden_dropout = 0.1f;
    options.attention_dropout = 0.1f;
    options.scale_factor = [](const ComputeOp&) { return 0.5f; };
    const kernels::cuda::TensorData data = [&](const Tensor& t) { return buffers.at(t.id); };
    const kernels::cuda::StreamContext ctx{st.stream, st.blas.get(), [&st](std::size_t bytes) {
                                             if (bytes > st.workspace_bytes) {
                                               CUDA_CHECK(cudaStreamSynchronize(st.stream));
                                               if (st.workspace) CUDA_CHECK(cudaFree(st.workspace));
                                               CUDA_CHECK(cudaMalloc(&st.workspace, bytes));
                                               st.workspace_bytes = bytes;
                                             }
                                             return st.workspace;
                                           }};
    const double result = body([&] { kernels::cuda::run(op, data, options, ctx); });
    cleanup();
    return result;
  } catch (...) {
    cleanup();
    throw;
  }
}

double CudaMicrobenchmarks::measure_seconds(const ComputeOp& op, int repeats, int warmup) {
  State& st = *state_;
  return with_op(op, [&](const std::function<void()>& launch) {
    for (int i = 0; i < warmup; ++i) launch();
    std::vector<double> times;
    for (int i = 0; i < std::max(repeats, 1); ++i) {
      CUDA_CHECK(cudaEventRecord(st.start, st.stream));
      launch();
      CUDA_CHECK(cudaEventRecord(st.end, st.stream));
      CUDA_CHECK(cudaEventSynchronize(st.end));
      float ms = 0;
      CUDA_CHECK(cudaEventElapsedTime(&ms, st.start, st.end));
      times.push_back(ms * 1e-3);
    }
    std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
    return times[times.size() / 2];
  });
}

double CudaMicrobenchmarks::gemm_seconds(std::int64_t m, std::int64_t n, std::int64_t k, int repeats) {
  ComputeOp op;
  op.kind = OpKind::gemm;
  op.label = "calibrate.gemm";
  op.args = GemmArgs{m, n, k, false, false, false, 1};
  op.inputs = {Tensor{0, {m, k}, DType::bf16}, Tensor{1, {k, n}, DType::bf16}};
  op.outputs = {Tensor{2, {m, n}, DType::bf16}};
  return measure_seconds(op, repeats);
}

double CudaMicrobenchmarks::copy_seconds(std::int64_t bytes, int repeats) {
  const std::int64_t n = std::max<std::int64_t>(bytes / 4, 1);
  ComputeOp op;
  op.kind = OpKind::memcpy;
  op.label = "calibrate.memcpy";
  op.args = MemcpyArgs{n};
  op.inputs = {Tensor{0, {n}, DType::fp32}};
  op.outputs = {Tensor{1, {n}, DType::fp32}};
  return measure_seconds(op, repeats);
}

}  // namespace tandem::exec::cuda
