#include "exec/cuda/calibration/nccl_timer.hpp"

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cuda/check.hpp"

namespace tandem::exec::cuda {

namespace {

void nccl_check(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) throw std::runtime_error(std::string(what) + ": " + ncclGetErrorString(r));
}

}  // namespace

struct NcclTimer::State {
  int devices = 0;
  std::size_t buffer_bytes = 0;
  // Communicators per member count (the first n GPUs): ncclCommInitAll per size.
  std::map<int, std::vector<ncclComm_t>> comms;
  std::vector<cudaStream_t> streams;
  std::vector<float*> buffers;
  std::vector<float*> outputs;

  const std::vector<ncclComm_t>& comms_for(int n) {
    auto it = comms.find(n);
    if (it != comms.end()) return it->second;
    std::vector<ncclComm_t> c(n);
    std::vector<int> list(n);
    for (int d = 0; d < n; ++d) list[d] = d;
    nccl_check(ncclCommInitAll(c.data(), n, list.data()), "ncclCommInitAll");
    return comms.emplace(n, std::move(c)).first->second;
  }
};

NcclTimer::NcclTimer(int devices, Bytes max_bytes) : state_(std::make_unique<State>()) {
  if (devices < 2) throw std::invalid_argument("NcclTimer needs 2 GPUs or more");
  State& st = *state_;
  st.devices = devices;
  st.buffer_bytes = static_cast<std::size_t>(max_bytes);
  for (int d = 0; d < devices; ++d) {
    CUDA_CHECK(cudaSetDevice(d));
    cudaStream_t s = nullptr;
    CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    st.streams.push_back(s);
    float* in = nullptr;
    float* out = nullptr;
    CUDA_CHECK(cudaMalloc(&in, st.buffer_bytes));
    CUDA_CHECK(cudaMalloc(&out, st.buffer_bytes));
    CUDA_CHECK(cudaMemset(in, 0, st.buffer_bytes));
    st.buffers.push_back(in);
    st.outputs.push_back(out);
  }
}

NcclTimer::~NcclTimer() {
  State& st = *state_;
  for (auto& [n, list] : st.comms)
    for (ncclComm_t c : list) ncclCommDestroy(c);
  for (int d = 0; d < st.devices; ++d) {
    cudaSetDevice(d);
    cudaStreamSynchronize(st.streams[d]);
    cudaFree(st.buffers[d]);
    cudaFree(st.outputs[d]);
    cudaStreamDestroy(st.streams[d]);
  }
}

Seconds NcclTimer::seconds(OpKind kind, Bytes bytes, int members, int warmup, int iterations) {
  State& st = *state_;
  const bool p2p = kind == OpKind::send || kind == OpKind::recv;
  const int n = p2p ? 2 : members;
  if (n < 2 || n > st.devices) throw std::invalid_argument("NcclTimer: group of " + std::to_string(n));
  if (bytes > static_cast<Bytes>(st.buffer_bytes)) throw std::invalid_argument("NcclTimer: message above the buffers");
  const std::vector<ncclComm_t>& comms = st.comms_for(n);
  const std::size_t count = static_cast<std::size_t>(bytes / sizeof(float));
  const std::size_t shard = count / static_cast<std::size_t>(n);
  auto launch = [&] {
    nccl_check(ncclGroupStart(), "ncclGroupStart");
    for (int d = 0; d < n; ++d) {
      float* in = st.buffers[d];
      float* out = st.outputs[d];
      cudaStream_t s = st.streams[d];
      switch (kind) {
        case OpKind::all_reduce: nccl_check(ncclAllReduce(in, in, count, ncclFloat, ncclSum, comms[d], s), "ncclAllReduce"); break;
        case OpKind::all_gather:
          nccl_check(ncclAllGather(in + d * shard, in, shard, ncclFloat, comms[d], s), "ncclAllGather");
          break;
        case OpKind::reduce_scatter:
          nccl_check(ncclReduceScatter(in, out, shard, ncclFloat, ncclSum, comms[d], s), "ncclReduceScatter");
          break;
        case OpKind::broadcast: nccl_check(ncclBroadcast(in, in, count, ncclFloat, 0, comms[d], s), "ncclBroadcast"); break;
        case OpKind::send:
        case OpKind::recv:
          if (d == 0) nccl_check(ncclSend(in, count, ncclFloat, 1, comms[d], s), "ncclSend");
          if (d == 1) nccl_check(ncclRecv(out, count, ncclFloat, 0, comms[d], s), "ncclRecv");
          break;
        default: throw std::invalid_argument(std::string("NcclTimer: no NCCL call for ") + to_string(kind));
      }
    }
    nccl_check(ncclGroupEnd(), "ncclGroupEnd");
  };
  auto sync = [&] {
    for (int d = 0; d < n; ++d) {
      CUDA_CHECK(cudaSetDevice(d));
      CUDA_CHECK(cudaStreamSynchronize(st.streams[d]));
    }
  };
  for (int i = 0; i < warmup; ++i) launch();
  sync();
  std::vector<double> times;
  for (int i = 0; i < std::max(1, iterations); ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    launch();
    sync();
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
  return times[times.size() / 2];
}

}  // namespace tandem::exec::cuda
