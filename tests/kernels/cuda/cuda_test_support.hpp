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
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
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

// Device scratch for a StreamContext's workspace: grown on demand (once the device is idle),
// freed with it.
class DeviceScratch {
 public:
  DeviceScratch() = default;
  DeviceScratch(const DeviceScratch&) = delete;
  DeviceScratch& operator=(const DeviceScratch&) = delete;
  ~DeviceScratch() {
    if (data_) cudaFree(data_);
  }
  void* get(std::size_t bytes) {
    if (bytes > bytes_) {
      CUDA_CHECK(cudaDeviceSynchronize());
      if (data_) CUDA_CHECK(cudaFree(data_));
      data_ = nullptr;
      CUDA_CHECK(cudaMalloc(&data_, bytes));
      bytes_ = bytes;
    }
    return data_;
  }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

// Runs `op` through kernels::cuda::run on device copies of `values` (storage by tensor id, one
// entry for every tensor of the op) and returns its outputs' storage. Throws what the dispatcher
// throws (the device copies are freed either way).
inline std::map<int, std::vector<float>> run_on_device(const ComputeOp& op,
                                                       const std::map<int, std::vector<float>>& values,
                                                       MathMode math = MathMode::fp32,
                                                       const cpu::RunOptions& options = {}) {
  struct DeviceTensors {
    std::map<int, float*> data;
    ~DeviceTensors() {
      for (auto& [id, p] : data) cudaFree(p);
    }
  } device;
  for (const auto& [id, v] : values) {
    float*& d = device.data[id];
    CUDA_CHECK(cudaMalloc(&d, sizeof(float) * std::max<std::size_t>(v.size(), 1)));
    CUDA_CHECK(cudaMemcpy(d, v.data(), sizeof(float) * v.size(), cudaMemcpyHostToDevice));
  }
  Blas blas(math);
  DeviceScratch scratch;
  StreamContext ctx{nullptr, &blas, [&](std::size_t bytes) { return scratch.get(bytes); }};
  kernels::cuda::run(op, [&](const Tensor& t) { return device.data.at(t.id); }, options, ctx);
  CUDA_CHECK(cudaDeviceSynchronize());
  std::map<int, std::vector<float>> outputs;
  for (const Tensor& t : op.outputs) {
    std::vector<float> g(static_cast<std::size_t>(t.numel()));
    CUDA_CHECK(cudaMemcpy(g.data(), device.data.at(t.id), sizeof(float) * g.size(), cudaMemcpyDeviceToHost));
    outputs[t.id] = std::move(g);
  }
  return outputs;
}

// `non_negative`: tensor ids whose values are taken absolute (AdamW's second moment). `given`:
// tensor ids whose values (storage, numel() floats) are these instead (a routing's indices).
inline OpOutcome run_on_both(const ComputeOp& op, MathMode math = MathMode::fp32, std::int32_t id_limit = 16,
                             const cpu::RunOptions& options = {}, const std::vector<int>& non_negative = {},
                             const std::map<int, std::vector<float>>& given = {}) {
  std::map<int, std::vector<float>> host;
  std::uint32_t seed = 7;
  for (const auto* list : {&op.inputs, &op.outputs})
    for (const Tensor& t : *list) {
      if (host.count(t.id)) continue;
      std::vector<float> v = kernels::cpu::testing::random_vector(static_cast<std::size_t>(t.numel()), seed++);
      if (std::find(non_negative.begin(), non_negative.end(), t.id) != non_negative.end())
        for (float& x : v) x = std::abs(x);
      if (const auto it = given.find(t.id); it != given.end()) {
        v = it->second;
        v.resize(static_cast<std::size_t>(t.numel()));
      } else if (t.dtype == DType::int32) {
        auto* ids = reinterpret_cast<std::int32_t*>(v.data());
        for (std::size_t i = 0; i < v.size(); ++i) ids[i] = static_cast<std::int32_t>((i * 7 + 3) % id_limit);
      }
      host[t.id] = std::move(v);
    }
  const std::map<int, std::vector<float>> initial = host;
  // An empty tensor (a top-k of k = 0) still gets an address, as run_on_device gives it one.
  float empty_word = 0;
  kernels::cpu::run(
      op, [&](const Tensor& t) { return host.at(t.id).empty() ? &empty_word : host.at(t.id).data(); }, options);
  OpOutcome outcome;
  outcome.gpu = run_on_device(op, initial, math, options);
  for (const Tensor& t : op.outputs) outcome.cpu[t.id] = host.at(t.id);
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

// What a dispatcher throws (std::logic_error), from the op's label on: the text past the
// backend's name, which the CPU and CUDA dispatchers word alike. "" when it does not throw.
template <typename Run>
std::string refusal(Run run) {
  try {
    run();
  } catch (const std::logic_error& e) {
    const std::string message = e.what();
    return message.substr(message.find("kernels: "));
  }
  return "";
}

// `gpu` equal to `cpu` bit for bit (floats as their bit patterns, so that block tables' raw
// words, NaN and −0 count too); names the first difference.
inline void expect_bitwise_equal(const std::vector<float>& gpu, const std::vector<float>& cpu, const std::string& what) {
  ASSERT_EQ(gpu.size(), cpu.size()) << what;
  for (std::size_t i = 0; i < cpu.size(); ++i) {
    std::uint32_t a = 0, b = 0;
    std::memcpy(&a, &gpu[i], sizeof a);
    std::memcpy(&b, &cpu[i], sizeof b);
    if (a != b) {
      ADD_FAILURE() << what << ": differs first at element " << i << ": bits " << std::hex << a << " (" << gpu[i]
                    << ") vs the CPU's " << b << " (" << cpu[i] << ")" << std::dec;
      return;
    }
  }
}

}  // namespace tandem::kernels::cuda::testing
