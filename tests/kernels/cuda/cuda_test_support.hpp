// Shared by the GPU tests: skip without a GPU, and run one ComputeOp on both backends. Every
// tensor of the op (inputs and outputs, since some outputs accumulate) gets the same seeded
// values on the host and the device; ids tensors get valid ids below `id_limit`. The op runs
// through kernels::cpu::run on the host copy and kernels::cuda::run on the device copy, and every
// output is compared norm-wise (max |gpu − cpu| / max |cpu|).
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "exec/cuda/cuda_run.hpp"
#include "kernels/cpu/dispatch.hpp"
#include "kernels/cuda/check.hpp"
#include "kernels/cuda/dispatch.hpp"
#include "tests/kernels/cpu/kernel_test_support.hpp"

namespace tandem::kernels::cuda::testing {

// fp32 kernels agree with the CPU reference to float rounding of differently ordered sums.
inline constexpr double kFp32Tolerance = 2e-5;
// bf16 tensor-core products (8-bit mantissa inputs, fp32 accumulation).
inline constexpr double kBf16Tolerance = 2e-2;

#define TANDEM_REQUIRE_GPU()                                                         \
  do {                                                                               \
    if (::tandem::exec::cuda::cuda_device_count() < 1) GTEST_SKIP() << "no CUDA device"; \
  } while (0)

struct OpOutcome {
  std::map<int, std::vector<float>> cpu, gpu;  // outputs by tensor id
};

// `non_negative`: tensor ids whose values are taken absolute (AdamW's second moment).
inline OpOutcome run_on_both(const ComputeOp& op, MathMode math = MathMode::fp32, std::int32_t id_limit = 16,
                             const cpu::RunOptions& options = {}, const std::vector<int>& non_negative = {}) {
  std::map<int, std::vector<float>> host;
  std::map<int, float*> device;
  std::uint32_t seed = 7;
  for (const auto* list : {&op.inputs, &op.outputs})
    for (const Tensor& t : *list) {
      if (host.count(t.id)) continue;
      std::vector<float> v = kernels::cpu::testing::random_vector(static_cast<std::size_t>(t.numel()), seed++);
      if (std::find(non_negative.begin(), non_negative.end(), t.id) != non_negative.end())
        for (float& x : v) x = std::abs(x);
      if (t.dtype == DType::int32) {
        auto* ids = reinterpret_cast<std::int32_t*>(v.data());
        for (std::size_t i = 0; i < v.size(); ++i) ids[i] = static_cast<std::int32_t>((i * 7 + 3) % id_limit);
      }
      float* d = nullptr;
      CUDA_CHECK(cudaMalloc(&d, sizeof(float) * std::max<std::size_t>(v.size(), 1)));
      CUDA_CHECK(cudaMemcpy(d, v.data(), sizeof(float) * v.size(), cudaMemcpyHostToDevice));
      device[t.id] = d;
      host[t.id] = std::move(v);
    }
  kernels::cpu::run(op, [&](const Tensor& t) { return host.at(t.id).data(); }, options);
  Blas blas(math);
  void* scratch = nullptr;
  std::size_t scratch_bytes = 0;
  StreamContext ctx{nullptr, &blas, [&](std::size_t bytes) {
                      if (bytes > scratch_bytes) {
                        CUDA_CHECK(cudaDeviceSynchronize());
                        if (scratch) CUDA_CHECK(cudaFree(scratch));
                        CUDA_CHECK(cudaMalloc(&scratch, bytes));
                        scratch_bytes = bytes;
                      }
                      return scratch;
                    }};
  kernels::cuda::run(op, [&](const Tensor& t) { return device.at(t.id); }, options, ctx);
  CUDA_CHECK(cudaDeviceSynchronize());
  OpOutcome outcome;
  for (const Tensor& t : op.outputs) {
    std::vector<float> g(static_cast<std::size_t>(t.numel()));
    CUDA_CHECK(cudaMemcpy(g.data(), device.at(t.id), sizeof(float) * g.size(), cudaMemcpyDeviceToHost));
    outcome.gpu[t.id] = std::move(g);
    outcome.cpu[t.id] = host.at(t.id);
  }
  for (auto& [id, p] : device) cudaFree(p);
  if (scratch) cudaFree(scratch);
  return outcome;
}

// Every output within `tolerance` (records the worst error as a test property).
inline void expect_agree(const ComputeOp& op, MathMode math = MathMode::fp32, double tolerance = kFp32Tolerance,
                         std::int32_t id_limit = 16, const cpu::RunOptions& options = {},
                         const std::vector<int>& non_negative = {}) {
  const OpOutcome o = run_on_both(op, math, id_limit, options, non_negative);
  double worst = 0;
  for (const auto& [id, cpu_values] : o.cpu) {
    const double err = kernels::cpu::testing::rel_error(o.gpu.at(id), cpu_values);
    worst = std::max(worst, err);
    EXPECT_LE(err, tolerance) << op.label << ": output tensor " << id;
  }
  ::testing::Test::RecordProperty("max_rel_error", std::to_string(worst));
}

inline Tensor tensor(int id, std::vector<std::int64_t> shape, DType dtype = DType::fp32) {
  return Tensor{id, std::move(shape), dtype};
}

inline ComputeOp make_op(OpKind kind, KernelArgs args, std::vector<Tensor> inputs, std::vector<Tensor> outputs,
                         std::string label = "mb0.layer0.op.fwd") {
  ComputeOp op;
  op.kind = kind;
  op.args = args;
  op.inputs = std::move(inputs);
  op.outputs = std::move(outputs);
  op.label = std::move(label);
  return op;
}

}  // namespace tandem::kernels::cuda::testing
