#include "exec/cuda/cuda_device.hpp"

#include <algorithm>
#include <variant>

#include "exec/common/op_labels.hpp"
#include "exec/common/tensor_storage.hpp"
#include "kernels/cuda/check.hpp"
#include "kernels/cuda/elementwise.cuh"

namespace tandem::exec::cuda {
namespace {

using I64 = std::int64_t;
constexpr std::size_t kLossSlots = 1 << 16;


std::size_t storage_bytes(I64 numel) { return sizeof(float) * static_cast<std::size_t>(std::max<I64>(numel, 1)); }

}  // namespace

CudaDevice::CudaDevice(int rank, int world_size, CudaSettings settings, Bootstrap* bootstrap,
                       std::int64_t micro_batch_offset)
    : rank_(rank), world_(world_size), settings_(std::move(settings)), bootstrap_(bootstrap),
      micro_batch_offset_(micro_batch_offset) {
  for (auto& s : streams_) CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  blas_ = std::make_unique<kernels::cuda::Blas>(settings_.math);
  CUDA_CHECK(cudaMallocHost(&loss_slots_, sizeof(float) * kLossSlots));
  CUDA_CHECK(cudaEventCreate(&epoch_));
  CUDA_CHECK(cudaEventRecord(epoch_, stream(Stream::compute)));
  CUDA_CHECK(cudaEventSynchronize(epoch_));
  host_epoch_ = std::chrono::steady_clock::now();
  if (bootstrap_) {
    Staging staging{[this](I64 floats) { return static_cast<float*>(allocator_.allocate(storage_bytes(floats))); },
                    [this](float* p, cudaStream_t s) {
                      cudaEvent_t e = nullptr;
                      CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
                      CUDA_CHECK(cudaEventRecord(e, s));
                      allocator_.free(p, e);
                    }};
    collectives_ = std::make_unique<NcclCollectives>(*bootstrap_, std::move(staging));
  }
}

CudaDevice::~CudaDevice() {
  cudaDeviceSynchronize();
  collectives_.reset();
  blas_.reset();
  for (auto& [id, b] : buffers_) allocator_.free(b.data);
  if (workspace_) cudaFree(workspace_);
  for (OpRecord& r : ops_) {
    if (r.start) cudaEventDestroy(r.start);
    if (r.end) cudaEventDestroy(r.end);
  }
  for (cudaEvent_t e : event_pool_) cudaEventDestroy(e);
  if (epoch_) cudaEventDestroy(epoch_);
  if (loss_slots_) cudaFreeHost(loss_slots_);
  for (auto& s : streams_) cudaStreamDestroy(s);
}

double CudaDevice::host_now_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - host_epoch_).count();
}

cudaEvent_t CudaDevice::event() {
  if (!event_pool_.empty()) {
    cudaEvent_t e = event_pool_.back();
    event_pool_.pop_back();
    return e;
  }
  cudaEvent_t e = nullptr;
  CUDA_CHECK(cudaEventCreate(&e));
  return e;
}

void* CudaDevice::workspace(std::size_t bytes) {
  if (bytes > workspace_bytes_) {
    // Growing: the old scratch may still be read by queued kernels.
    CUDA_CHECK(cudaStreamSynchronize(stream(Stream::compute)));
    if (workspace_) CUDA_CHECK(cudaFree(workspace_));
    workspace_ = nullptr;
    workspace_bytes_ = std::max(bytes, workspace_bytes_ * 3 / 2);
    CUDA_CHECK(cudaMalloc(&workspace_, workspace_bytes_));
  }
  return workspace_;
}

// ---------------------------------------------------------------- memory

Tensor CudaDevice::alloc(std::string_view name, std::vector<std::int64_t> shape, DType dtype, MemCategory category) {
  Tensor t{next_tensor_id_++, std::move(shape), dtype};
  const I64 n = t.numel();
  float* data = static_cast<float*>(allocator_.allocate(storage_bytes(n)));
  memory_.allocate(t.id, t.bytes(), category);
  names_[t.id] = std::string(name);
  buffers_[t.id] = Buffer{data, n, category};
  cudaStream_t s = stream(Stream::compute);
  // Host-made values (data) are staged through pageable memory: cudaMemcpyAsync returns once
  // they are copied out, so the vector may go at once. A parameter's values wait for place()
  // (its part of the logical tensor), or for the first op when it is never placed: computing
  // them twice would double the host time of a large model's setup.
  std::vector<float> host;
  if (category == MemCategory::parameters) unplaced_parameters_.push_back(t.id);
  else if (category == MemCategory::activations) host = data_values(t, name, nullptr);
  if (!host.empty()) {
    CUDA_CHECK(cudaMemcpyAsync(data, host.data(), sizeof(float) * host.size(), cudaMemcpyHostToDevice, s));
  } else {
    CUDA_CHECK(cudaMemsetAsync(data, 0, storage_bytes(n), s));
  }
  return t;
}

std::vector<float> CudaDevice::data_values(const Tensor& t, std::string_view name, const TensorPlacement* where) const {
  I64 k = 0;
  std::string_view role;
  if (!settings_.data || iteration_ < 0 || !parse_data_name(name, k, role)) return {};
  std::vector<float> host(static_cast<std::size_t>(t.numel()), 0.0f);
  cpu::DataPosition at;
  at.iteration = iteration_;
  at.micro_batch = micro_batch_offset_ + k;
  at.sequences_per_iteration = settings_.sequences_per_iteration;
  if (where && !where->segments.empty()) {
    at.segments = where->segments;
    at.seq_length = where->global_shape.at(static_cast<std::size_t>(where->dim));
  }
  if (!settings_.data->fill(role, t, host.data(), at)) host.clear();
  return host;
}

void CudaDevice::free_buffer(int tensor_id, cudaEvent_t ready) {
  auto it = buffers_.find(tensor_id);
  if (it == buffers_.end()) return;
  allocator_.free(it->second.data, ready);
  if (it->second.category == MemCategory::activations) names_.erase(tensor_id);
  buffers_.erase(it);
}

void CudaDevice::upload(float* device, const std::vector<float>& host) {
  CUDA_CHECK(cudaMemcpyAsync(device, host.data(), sizeof(float) * host.size(), cudaMemcpyHostToDevice,
                             stream(Stream::compute)));
}

void CudaDevice::init_unplaced_parameters() {
  for (int id : unplaced_parameters_) {
    auto it = buffers_.find(id);
    if (it == buffers_.end() || placements_.count(id)) continue;
    std::vector<float> host(static_cast<std::size_t>(it->second.numel));
    cpu::init_parameter(names_.at(id), host.data(), it->second.numel, settings_.seed, settings_.init_std);
    upload(it->second.data, host);
  }
  unplaced_parameters_.clear();
}

void CudaDevice::place(const Tensor& tensor, const TensorPlacement& placement) {
  auto it = buffers_.find(tensor.id);
  if (it != buffers_.end() && it->second.category == MemCategory::activations) {
    // A data tensor holding part of the sequence (context parallelism): refilled from those
    // positions, as the CPU backend's. Activations keep no placement.
    const std::vector<float> host = data_values(tensor, names_.at(tensor.id), &placement);
    if (!host.empty()) upload(it->second.data, host);
    return;
  }
  placements_[tensor.id] = placement;
  if (it == buffers_.end()) return;
  // The CPU backend's values, made on the host (one source of truth for both backends).
  std::vector<float> host(static_cast<std::size_t>(it->second.numel));
  if (cpu::init_placed_tensor(it->second.category, placement, host.data(), it->second.numel, settings_.seed,
                              settings_.init_std))
    upload(it->second.data, host);
}

void CudaDevice::release(const Tensor& tensor) {
  memory_.release(tensor.id);  // unknown ids: std::logic_error
  // A comm op on another stream may still read the buffer: free it behind that stream.
  cudaEvent_t ready = nullptr;
  auto it = last_comm_op_.find(tensor.id);
  if (it != last_comm_op_.end()) {
    const OpRecord& r = ops_[static_cast<std::size_t>(it->second)];
    if (r.end) {
      CUDA_CHECK(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
      CUDA_CHECK(cudaEventRecord(ready, stream(r.stream)));
    }
    last_comm_op_.erase(it);
  }
  free_buffer(tensor.id, ready);
}

void CudaDevice::release_after(const Tensor& tensor, Handle handle) {
  if (handle.valid() && static_cast<std::size_t>(handle.id) < ops_.size() && ops_[handle.id].end)
    last_comm_op_[tensor.id] = handle.id;  // release() frees it behind that op's stream
  release(tensor);
}

void CudaDevice::reacquire(const Tensor& tensor, MemCategory category) {
  if (buffers_.count(tensor.id))
    throw std::logic_error("reacquire of tensor " + std::to_string(tensor.id) + ", which is still allocated");
  const I64 n = tensor.numel();
  float* data = static_cast<float*>(allocator_.allocate(storage_bytes(n)));
  CUDA_CHECK(cudaMemsetAsync(data, 0, storage_bytes(n), stream(Stream::compute)));
  buffers_[tensor.id] = Buffer{data, n, category};
  memory_.allocate(tensor.id, tensor.bytes(), category);
}

float* CudaDevice::storage(const Tensor& tensor, const std::string& label) {
  return checked_buffer(buffers_, names_, tensor, label).data;
}

float* CudaDevice::device_data(const Tensor& tensor) {
  if (!unplaced_parameters_.empty()) init_unplaced_parameters();
  return storage(tensor, "device_data()");
}

std::vector<float> CudaDevice::read(const Tensor& tensor) {
  float* p = storage(tensor, "read()");
  synchronize();
  std::vector<float> out(static_cast<std::size_t>(tensor.numel()));
  CUDA_CHECK(cudaMemcpy(out.data(), p, sizeof(float) * out.size(), cudaMemcpyDeviceToHost));
  return out;
}

std::vector<cpu::PlacedTensor> CudaDevice::placed_snapshot(const std::set<MemCategory>& categories) {
  synchronize();
  std::vector<cpu::PlacedTensor> out;
  for (const auto& [id, b] : buffers_) {
    if (!categories.count(b.category)) continue;
    auto placed = placements_.find(id);
    cpu::PlacedTensor t{placed != placements_.end() ? placed->second : whole_tensor(names_.at(id), {b.numel}),
                        std::vector<float>(static_cast<std::size_t>(b.numel))};
    CUDA_CHECK(cudaMemcpy(t.values.data(), b.data, sizeof(float) * t.values.size(), cudaMemcpyDeviceToHost));
    out.push_back(std::move(t));
  }
  return out;
}

std::set<std::string> CudaDevice::restore_global(const std::map<std::string, std::vector<float>>& global,
                                                 const std::set<MemCategory>& categories) {
  // Parameters still waiting for their first values get them now, so that the first op does not
  // overwrite what is restored.
  if (!unplaced_parameters_.empty()) init_unplaced_parameters();
  synchronize();
  // Check everything first: nothing is half-restored.
  std::vector<std::pair<const Buffer*, TensorPlacement>> plan;
  for (const auto& [id, b] : buffers_) {
    if (!categories.count(b.category)) continue;
    auto placed = placements_.find(id);
    TensorPlacement p = placed != placements_.end() ? placed->second : whole_tensor(names_.at(id), {b.numel});
    cpu::restorable_values(global, p);
    plan.emplace_back(&b, std::move(p));
  }
  std::set<std::string> used;
  for (const auto& [b, p] : plan) {
    std::vector<float> part(static_cast<std::size_t>(b->numel));
    cpu::extract_part(global.at(p.name), p, part.data(), b->numel);
    CUDA_CHECK(cudaMemcpy(b->data, part.data(), sizeof(float) * part.size(), cudaMemcpyHostToDevice));
    used.insert(p.name);
  }
  return used;
}

std::map<std::string, std::vector<float>> CudaDevice::snapshot(const std::set<MemCategory>& categories) {
  synchronize();
  std::map<std::string, std::vector<float>> out;
  for (const auto& [id, b] : buffers_) {
    if (!categories.count(b.category)) continue;
    const std::string& name = names_.at(id);
    if (out.count(name)) throw std::logic_error("snapshot: two live tensors named '" + name + "'");
    std::vector<float> v(static_cast<std::size_t>(b.numel));
    CUDA_CHECK(cudaMemcpy(v.data(), b.data, sizeof(float) * v.size(), cudaMemcpyDeviceToHost));
    out.emplace(name, std::move(v));
  }
  return out;
}

// ---------------------------------------------------------------- ops

std::int64_t CudaDevice::begin_op(Stream s, const std::vector<Handle>& after) {
  if (!unplaced_parameters_.empty()) init_unplaced_parameters();
  for (const Handle& h : after) {
    if (!h.valid()) continue;
    if (static_cast<std::size_t>(h.id) >= ops_.size()) throw std::logic_error("wait on unknown handle " + std::to_string(h.id));
    const OpRecord& r = ops_[h.id];
    if (r.end) CUDA_CHECK(cudaStreamWaitEvent(stream(s), r.end, 0));
  }
  OpRecord r;
  r.stream = s;
  r.start = event();
  r.end = event();
  CUDA_CHECK(cudaEventRecord(r.start, stream(s)));
  ops_.push_back(std::move(r));
  return static_cast<std::int64_t>(ops_.size() - 1);
}

Handle CudaDevice::compute(ComputeOp op, const Issue& issue) {
  try {
    const Stream s = issue.stream;
    cudaStream_t cs = stream(s);
    kernels::cuda::RunOptions options;
    options.seed = settings_.seed;
    options.iteration = iteration_;
    options.hidden_dropout = settings_.hidden_dropout;
    options.attention_dropout = settings_.attention_dropout;
    options.router_load = &router_load_;
    const kernels::cuda::TensorData data = [this, &op](const Tensor& t) { return storage(t, op.label); };
    const kernels::cuda::StreamContext ctx{cs, blas_.get(), [this](std::size_t b) { return workspace(b); }};
    const std::int64_t id = begin_op(s, issue.after);
    ++compute_ops_;
    if (micro_batch_offset_ != 0 && draws_dropout(op)) {  // masks drawn from the global micro-batch
      ComputeOp global = op;
      global.label = with_global_micro_batch(op.label, micro_batch_offset_);
      kernels::cuda::run(global, data, options, ctx);
    } else {
      kernels::cuda::run(op, data, options, ctx);
    }
    OpRecord& r = ops_[static_cast<std::size_t>(id)];
    CUDA_CHECK(cudaEventRecord(r.end, cs));
    if (is_loss_mean(op)) {
      I64 k = 0;
      std::size_t rest = 0;
      const bool has_mb = parse_micro_batch(op.label, k, rest);
      const std::size_t slot = loss_slot_count_++ % kLossSlots;
      CUDA_CHECK(cudaMemcpyAsync(loss_slots_ + slot, storage(op.outputs[0], op.label), sizeof(float),
                                 cudaMemcpyDeviceToHost, cs));
      pending_losses_.push_back({micro_batch_offset_ + (has_mb ? k : 0), slot});
    }
    r.trace = op_trace_record(rank_, iteration_, op, s, 0, 0);  // times: from its events
    r.traced = true;
    return Handle{id};
  } catch (const cpu::OpError&) {
    throw;
  } catch (const std::exception& e) {
    throw cpu::OpError(op.label, e.what());
  }
}

Handle CudaDevice::communicate(CommOp op, const Issue& issue) {
  try {
    // A collective of one member leaves its buffer as it is (sum, avg, max, gather of itself):
    // no NCCL call, so a one-GPU run needs no communicator. It is still an op with a trace record.
    const bool trivial = is_collective(op.kind) && op.group.size() == 1;
    if (!collectives_ && !trivial) throw std::logic_error("this device has no communicator (one process, one rank)");
    if (is_collective(op.kind) && op.group.index_of(rank_) < 0)
      throw std::logic_error("rank " + std::to_string(rank_) + " is not in its group " + std::to_string(op.group.id));
    if (!is_collective(op.kind) && (op.peer < 0 || op.peer >= world_ || op.peer == rank_))
      throw std::logic_error("bad peer " + std::to_string(op.peer));
    const Stream s = issue.stream;
    std::vector<Handle> after = issue.after;
    if (s != Stream::compute) after.push_back(record(Stream::compute));  // buffers written or zeroed there
    DeviceBuffer buffer, parts;
    std::vector<int> touched;
    if (op.bucket.empty()) {
      const auto [offset, count] = op.buffer_range();  // a part, for point-to-point ops
      buffer.push_back(DeviceSpan{storage(op.buffer, op.label) + offset, count});
      touched.push_back(op.buffer.id);
    }
    for (const Tensor& t : op.bucket) {
      buffer.push_back(DeviceSpan{storage(t, op.label), t.numel()});
      touched.push_back(t.id);
    }
    const bool sharded = op.kind == OpKind::reduce_scatter || op.kind == OpKind::all_gather;
    if (sharded) {  // out-of-place parts (CommShards); other kinds have none
      for (const Tensor& t : op.shards.tensors) {
        parts.push_back(DeviceSpan{storage(t, op.label), t.numel()});
        touched.push_back(t.id);
      }
    }
    const std::int64_t id = begin_op(s, after);
    ++comm_ops_;
    if (!trivial) collectives_->run(op, buffer, parts, stream(s));
    else if (sharded && !parts.empty()) one_member_parts(op, buffer, parts, stream(s));
    OpRecord& r = ops_[static_cast<std::size_t>(id)];
    CUDA_CHECK(cudaEventRecord(r.end, stream(s)));
    if (s != Stream::compute)
      for (int t : touched) last_comm_op_[t] = id;
    r.trace = op_trace_record(rank_, iteration_, op, s, 0, 0);  // times: from its events
    r.traced = true;
    return Handle{id};
  } catch (const cpu::OpError&) {
    throw;
  } catch (const std::exception& e) {
    throw cpu::OpError(op.label, e.what());
  }
}

// A reduce-scatter or all-gather of one member: its part of each tensor is the whole tensor, so
// the op is a copy between tensors and parts (added into the part when accumulating).
void CudaDevice::one_member_parts(const CommOp& op, const DeviceBuffer& full, const DeviceBuffer& parts,
                                  cudaStream_t s) {
  if (parts.size() != full.size())
    throw std::logic_error("collective with " + std::to_string(full.size()) + " tensors and " +
                           std::to_string(parts.size()) + " parts");
  for (std::size_t j = 0; j < full.size(); ++j) {
    const I64 n = full[j].size;
    if (parts[j].size < n) throw std::logic_error("part " + std::to_string(j) + " is smaller than its share");
    if (n == 0) continue;
    const bool reduce = op.kind == OpKind::reduce_scatter;
    if (reduce && op.shards.accumulate) {
      kernels::cuda::add_forward(parts[j].data, parts[j].data, full[j].data, n, n, s);
      continue;
    }
    float* dst = reduce ? parts[j].data : full[j].data;
    const float* src = reduce ? full[j].data : parts[j].data;
    CUDA_CHECK(cudaMemcpyAsync(dst, src, sizeof(float) * static_cast<std::size_t>(n), cudaMemcpyDeviceToDevice, s));
  }
}

void CudaDevice::wait(Handle handle) {
  if (!handle.valid()) return;
  if (static_cast<std::size_t>(handle.id) >= ops_.size())
    throw std::logic_error("wait on unknown handle " + std::to_string(handle.id));
  if (cudaEvent_t e = ops_[handle.id].end) CUDA_CHECK(cudaEventSynchronize(e));
}

Handle CudaDevice::record(Stream s) {
  OpRecord r;
  r.stream = s;
  r.end = event();
  CUDA_CHECK(cudaEventRecord(r.end, stream(s)));
  ops_.push_back(std::move(r));
  return Handle{static_cast<std::int64_t>(ops_.size() - 1)};
}

void CudaDevice::synchronize() {
  if (!unplaced_parameters_.empty()) init_unplaced_parameters();
  for (cudaStream_t s : streams_) CUDA_CHECK(cudaStreamSynchronize(s));
}

void CudaDevice::begin_iteration(int iteration) {
  iteration_ = iteration;
  iteration_start_s_ = host_now_s();
}

void CudaDevice::finish_iteration_records() {
  for (std::size_t i = first_open_op_; i < ops_.size(); ++i) {
    OpRecord& r = ops_[i];
    if (r.traced && r.start && r.end) {
      float start_ms = 0, end_ms = 0;
      CUDA_CHECK(cudaEventElapsedTime(&start_ms, epoch_, r.start));
      CUDA_CHECK(cudaEventElapsedTime(&end_ms, epoch_, r.end));
      r.trace.start_s = start_ms * 1e-3;
      r.trace.end_s = end_ms * 1e-3;
      const double busy = r.trace.end_s - r.trace.start_s;
      if (is_communication(r.trace.kind)) comm_busy_s_ += busy;
      else compute_s_ += busy;
      if (settings_.record_trace) trace_.push_back(std::move(r.trace));
    }
    // Recycle the events: the handle now reads as complete.
    if (r.start) event_pool_.push_back(r.start);
    if (r.end) event_pool_.push_back(r.end);
    r = OpRecord{};
  }
  first_open_op_ = ops_.size();
  last_comm_op_.clear();
}

void CudaDevice::end_iteration() {
  synchronize();
  windows_.push_back({iteration_start_s_, host_now_s()});
  finish_iteration_records();
  for (const PendingLoss& l : pending_losses_) losses_.push_back({iteration_, l.micro_batch, loss_slots_[l.slot]});
  pending_losses_.clear();
}

}  // namespace tandem::exec::cuda
