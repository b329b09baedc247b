// The CUDA backend of the per-rank interface (strategies/runtime.hpp): one CudaDevice per process,
// driving one GPU.
//
// Memory. Every tensor lives in device memory from the CachingAllocator (caching_allocator.hpp)
// as numel() fp32 values whatever its declared dtype, zero-filled at alloc: the storage contract
// of kernels/cpu/dispatch.hpp, so the CUDA kernels read the same layouts as the CPU ones. The
// MemoryLedger counts the DECLARED bytes by category (the simulator's notion of peak memory);
// the allocator reports what the GPU really held (peak in use, peak reserved). Parameters, data
// tensors and, at place(), placed parameters and fp32 masters are initialised exactly as on the
// CPU backend (exec/cpu/data.hpp: the same host code's values, copied to the device), so both
// backends start every strategy from the same global weights and train the same numbers.
// placed_snapshot() gives the state in the CPU backend's global form (global_state.hpp).
//
// Streams. One CUDA stream per Runtime stream (compute, dp_comm, tp_comm, pp_send, pp_recv).
// Every op is enqueued asynchronously between two CUDA events (start, end); its Handle is its
// end event: Issue::after becomes cudaStreamWaitEvent, wait() cudaEventSynchronize, record()
// an event on that stream. A communication op also waits for the compute work issued before it
// (so a buffer freshly allocated or written on the compute stream is ready), then runs NCCL on
// its own stream, overlapping the compute issued after it.
//
// Trace. At end_iteration the device synchronises and turns every op's event pair into a
// TraceRecord (op_id = label, times relative to the device's epoch event): kernel time as the
// GPU ran it. Losses (the loss-mean op's scalar) are copied to pinned host memory behind the op
// and read at end_iteration.
#pragma once

#include <cuda_runtime.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "analysis/trace.hpp"
#include "exec/cpu/cpu_device.hpp"
#include "exec/cpu/data.hpp"
#include "exec/cpu/global_state.hpp"
#include "exec/cuda/caching_allocator.hpp"
#include "exec/cuda/nccl_collectives.hpp"
#include "kernels/cpu/moe.hpp"
#include "kernels/cuda/dispatch.hpp"
#include "strategies/memory_ledger.hpp"
#include "strategies/runtime.hpp"

namespace tandem::exec::cuda {

struct CudaSettings : cpu::TrainingSettings {
  kernels::cuda::MathMode math = kernels::cuda::MathMode::bf16;
};

class CudaDevice final : public Runtime {
 public:
  // `collectives` may be null when the strategy never communicates (one rank).
  CudaDevice(int rank, int world_size, CudaSettings settings, Bootstrap* bootstrap, std::int64_t micro_batch_offset = 0);
  ~CudaDevice() override;
  CudaDevice(const CudaDevice&) = delete;
  CudaDevice& operator=(const CudaDevice&) = delete;

  int rank() const override { return rank_; }
  int world_size() const override { return world_; }
  Tensor alloc(std::string_view name, std::vector<std::int64_t> shape, DType dtype, MemCategory category) override;
  void release(const Tensor& tensor) override;
  void reacquire(const Tensor& tensor, MemCategory category) override;
  void release_after(const Tensor& tensor, Handle handle) override;
  void place(const Tensor& tensor, const TensorPlacement& placement) override;
  Handle compute(ComputeOp op, const Issue& issue) override;
  Handle communicate(CommOp op, const Issue& issue) override;
  void wait(Handle handle) override;
  Handle record(Stream stream) override;
  void synchronize() override;
  void begin_iteration(int iteration) override;
  void end_iteration() override;

  // ---- results ----
  float* device_data(const Tensor& tensor);    // device pointer of a live tensor
  std::vector<float> read(const Tensor& tensor);  // its values (synchronises)
  const MemoryLedger& memory() const { return memory_; }
  const CachingAllocator& allocator() const { return allocator_; }
  const std::vector<TraceRecord>& trace_records() const { return trace_; }
  const std::vector<cpu::LossRecord>& losses() const { return losses_; }
  const std::vector<std::pair<double, double>>& iteration_windows() const { return windows_; }
  double compute_s() const { return compute_s_; }
  double comm_busy_s() const { return comm_busy_s_; }
  std::size_t compute_ops() const { return compute_ops_; }
  std::size_t comm_ops() const { return comm_ops_; }
  // Mixture-of-experts models: every forward routing's expert load, as the CPU device measures it
  // (each routing's picks are copied to the host behind the route op, which waits for them).
  const kernels::cpu::RouterLoad& router_load() const { return router_load_; }
  std::map<std::string, std::vector<float>> snapshot(const std::set<MemCategory>& categories);
  // Live tensors of these categories with their placements (unplaced: whole, under their name).
  std::vector<cpu::PlacedTensor> placed_snapshot(const std::set<MemCategory>& categories);
  // Sets every live tensor of these categories from the global state (a checkpoint's tensors,
  // cpu::CpuDevice::restore_global's rules: each takes its part, padding zero); returns the logical
  // tensors used. Throws std::runtime_error, restoring nothing, when one is missing or mis-sized.
  std::set<std::string> restore_global(const std::map<std::string, std::vector<float>>& global,
                                       const std::set<MemCategory>& categories);
  cudaStream_t stream(Stream s) const { return streams_[static_cast<int>(s)]; }
  kernels::cuda::Blas& blas() { return *blas_; }

 private:
  struct Buffer {
    float* data = nullptr;
    std::int64_t numel = 0;
    MemCategory category = MemCategory::activations;
  };
  struct OpRecord {
    cudaEvent_t start = nullptr, end = nullptr;  // null end: complete (events recycled)
    Stream stream = Stream::compute;
    bool traced = false;
    TraceRecord trace;
  };

  float* storage(const Tensor& tensor, const std::string& label);
  cudaEvent_t event();
  void free_buffer(int tensor_id, cudaEvent_t ready);
  void upload(float* device, const std::vector<float>& host);  // on the compute stream
  void init_unplaced_parameters();  // whole-tensor values of parameters never placed
  // A data tensor's values (tokens, labels) from settings_.data, or empty when `name` is not a
  // data tensor; with `where`'s segments, those positions of the sequence (context parallelism).
  std::vector<float> data_values(const Tensor& t, std::string_view name, const TensorPlacement* where) const;
  void one_member_parts(const CommOp& op, const DeviceBuffer& full, const DeviceBuffer& parts, cudaStream_t s);
  std::int64_t begin_op(Stream stream, const std::vector<Handle>& after);
  void finish_iteration_records();
  void* workspace(std::size_t bytes);
  double host_now_s() const;

  int rank_, world_;
  CudaSettings settings_;
  Bootstrap* bootstrap_;
  std::int64_t micro_batch_offset_;
  CachingAllocator allocator_;
  std::unique_ptr<kernels::cuda::Blas> blas_;
  std::unique_ptr<NcclCollectives> collectives_;
  std::array<cudaStream_t, kStreamCount> streams_{};
  cudaEvent_t epoch_ = nullptr;
  std::chrono::steady_clock::time_point host_epoch_;
  void* workspace_ = nullptr;
  std::size_t workspace_bytes_ = 0;
  float* loss_slots_ = nullptr;  // pinned host memory
  std::size_t loss_slot_count_ = 0;
  struct PendingLoss {
    std::int64_t micro_batch;
    std::size_t slot;
  };
  std::vector<PendingLoss> pending_losses_;

  std::unordered_map<int, Buffer> buffers_;
  std::unordered_map<int, std::string> names_;
  std::unordered_map<int, TensorPlacement> placements_;
  std::vector<int> unplaced_parameters_;  // allocated since the last op, values not yet set
  std::unordered_map<int, std::int64_t> last_comm_op_;  // tensor -> handle of the last comm op using it
  MemoryLedger memory_;
  int next_tensor_id_ = 0;

  std::vector<OpRecord> ops_;  // by handle id
  std::vector<cudaEvent_t> event_pool_;
  std::size_t first_open_op_ = 0;  // ops before this index are resolved

  int iteration_ = -1;
  double iteration_start_s_ = 0;
  std::vector<std::pair<double, double>> windows_;
  std::vector<TraceRecord> trace_;
  std::vector<cpu::LossRecord> losses_;
  double compute_s_ = 0, comm_busy_s_ = 0;
  std::size_t compute_ops_ = 0, comm_ops_ = 0;
  kernels::cpu::RouterLoad router_load_;
};

}  // namespace tandem::exec::cuda
