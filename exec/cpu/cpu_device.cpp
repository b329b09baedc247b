#include "exec/cpu/cpu_device.hpp"

#include <algorithm>
#include <cstring>
#include <variant>

#include "common/usable_cores.hpp"
#include "exec/common/op_labels.hpp"
#include "exec/common/tensor_storage.hpp"
#include "kernels/cpu/dispatch.hpp"

namespace tandem::exec::cpu {

namespace {

using I64 = std::int64_t;
constexpr auto kPoll = std::chrono::milliseconds(20);

std::string seconds_text(std::chrono::milliseconds ms) {
  std::string text = std::to_string(static_cast<double>(ms.count()) / 1000.0);
  while (!text.empty() && text.back() == '0') text.pop_back();
  if (!text.empty() && text.back() == '.') text.pop_back();
  return text + " s";
}

}  // namespace

// ---------------------------------------------------------------- run context

CpuRunContext::CpuRunContext(int world_size, DeviceSettings settings)
    : CpuRunContext(world_size, settings, std::make_unique<SharedMemoryComm>(settings.timeout)) {}

CpuRunContext::CpuRunContext(int world_size, DeviceSettings settings, std::unique_ptr<RankComm> comm)
    : world_(world_size),
      settings_(std::move(settings)),
      comm_(std::move(comm)),
      gate_(settings_.cores > 0 ? settings_.cores
                                : usable_cores()),
      epoch_(std::chrono::steady_clock::now()) {}

double CpuRunContext::now_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - epoch_).count();
}

bool CpuRunContext::fail(int rank, const std::string& op_label, const std::string& message) {
  bool first = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (failure_.empty()) {
      failure_ = "rank " + std::to_string(rank) + " failed" +
                 (op_label.empty() ? std::string() : " in op " + op_label) + ": " + message;
      first = true;
    }
  }
  comm_->abort();
  return first;
}

bool CpuRunContext::failed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return !failure_.empty();
}

std::string CpuRunContext::failure() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return failure_;
}

// ---------------------------------------------------------------- device

CpuDevice::CpuDevice(int rank, CpuRunContext& context, std::int64_t micro_batch_offset)
    : rank_(rank), context_(context), micro_batch_offset_(micro_batch_offset) {}

CpuDevice::~CpuDevice() { shutdown(); }

void CpuDevice::shutdown() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    for (Worker& w : workers_) wake_worker_locked(w);
  }
  for (Worker& w : workers_)
    if (w.thread.joinable()) w.thread.join();
}

void CpuDevice::check_aborted() const {
  if (context_.aborted()) throw AbortedError("aborted: another rank failed");
}

void CpuDevice::check_injection(const std::string& label, int iteration) const {
  const DeviceSettings& s = context_.settings();
  if (rank_ == s.fail_rank && label == s.fail_op && (s.fail_iteration < 0 || iteration == s.fail_iteration))
    throw std::runtime_error("injected failure");
}

// ---------------------------------------------------------------- memory

Tensor CpuDevice::alloc(std::string_view name, std::vector<std::int64_t> shape, DType dtype,
                        MemCategory category) {
  check_aborted();
  std::unique_lock<std::mutex> lock(mutex_);
  Tensor t{next_tensor_id_++, std::move(shape), dtype};
  const I64 n = t.numel();
  Buffer buffer{take_storage_locked(n), n, category};
  memory_.allocate(t.id, t.bytes(), category);
  names_[t.id] = std::string(name);
  float* data = buffer.data.get();
  buffers_.emplace(t.id, std::move(buffer));
  lock.unlock();

  const DeviceSettings& s = context_.settings();
  if (category == MemCategory::parameters) init_parameter(name, data, n, s.seed, s.init_std);
  else if (category == MemCategory::activations) fill_data(t, name, data, {});
  return t;
}

void CpuDevice::fill_data(const Tensor& t, std::string_view name, float* data, const TensorPlacement& where) const {
  const DeviceSettings& s = context_.settings();
  I64 k = 0;
  std::string_view role;
  if (!s.data || iteration_ < 0 || !parse_data_name(name, k, role)) return;
  DataPosition at;
  at.iteration = iteration_;
  at.micro_batch = micro_batch_offset_ + k;
  at.sequences_per_iteration = s.sequences_per_iteration;
  if (!where.segments.empty()) {
    at.segments = where.segments;
    at.seq_length = where.global_shape.at(static_cast<std::size_t>(where.dim));
  }
  s.data->fill(role, t, data, at);
}

void CpuDevice::release_locked(int tensor_id) {
  memory_.release(tensor_id);  // unknown ids: std::logic_error
  auto it = buffers_.find(tensor_id);
  // Activations are never reacquired: forget their names (a run allocates thousands per step).
  if (it == buffers_.end()) return;
  if (it->second.category == MemCategory::activations) names_.erase(tensor_id);
  free_storage_[std::max<I64>(it->second.numel, 1)].push_back(std::move(it->second.data));
  buffers_.erase(it);
}

std::unique_ptr<float[]> CpuDevice::take_storage_locked(I64 numel) {
  const auto size = static_cast<std::size_t>(std::max<I64>(numel, 1));
  auto it = free_storage_.find(static_cast<I64>(size));
  if (it == free_storage_.end() || it->second.empty()) return std::unique_ptr<float[]>(new float[size]());
  std::unique_ptr<float[]> data = std::move(it->second.back());
  it->second.pop_back();
  std::fill(data.get(), data.get() + size, 0.0f);  // as fresh storage is
  return data;
}

void CpuDevice::place(const Tensor& tensor, const TensorPlacement& placement) {
  std::unique_lock<std::mutex> lock(mutex_);
  auto it = buffers_.find(tensor.id);
  if (it != buffers_.end() && it->second.category == MemCategory::activations) {
    // A data tensor holding part of the sequence (context parallelism): filled from those
    // positions. Activations keep no placement (thousands are allocated per step).
    float* data = it->second.data.get();
    const std::string name = names_.at(tensor.id);
    lock.unlock();
    fill_data(tensor, name, data, placement);
    return;
  }
  placements_[tensor.id] = placement;
  if (it == buffers_.end()) return;
  const DeviceSettings& s = context_.settings();
  Buffer& b = it->second;
  init_placed_tensor(b.category, placement, b.data.get(), b.numel, s.seed, s.init_std);
}

TensorPlacement CpuDevice::placement_locked(int tensor_id) const {
  auto it = placements_.find(tensor_id);
  if (it != placements_.end()) return it->second;
  return whole_tensor(names_.at(tensor_id), {buffers_.at(tensor_id).numel});
}

void CpuDevice::release(const Tensor& tensor) {
  std::lock_guard<std::mutex> lock(mutex_);
  release_locked(tensor.id);
}

void CpuDevice::reacquire(const Tensor& tensor, MemCategory category) {
  // A release_after still waiting for its op is a release already issued (stream order, as
  // cudaFreeAsync): the new storage comes after it.
  std::int64_t releasing = -1;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = releasing_.find(tensor.id);
    if (it != releasing_.end()) releasing = it->second;
  }
  if (releasing >= 0) wait_handle(releasing);
  std::lock_guard<std::mutex> lock(mutex_);
  if (buffers_.count(tensor.id))
    throw std::logic_error("reacquire of tensor " + std::to_string(tensor.id) +
                           ", which is still allocated");
  const I64 n = tensor.numel();
  buffers_.emplace(tensor.id, Buffer{take_storage_locked(n), n, category});
  memory_.allocate(tensor.id, tensor.bytes(), category);
}

void CpuDevice::release_after(const Tensor& tensor, Handle handle) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!handle.valid() || handle.id >= static_cast<std::int64_t>(ops_.size()) ||
      ops_[handle.id].done) {
    release_locked(tensor.id);
    return;
  }
  ops_[handle.id].release_on_completion.push_back(tensor.id);
  releasing_[tensor.id] = handle.id;
}

float* CpuDevice::storage_locked(const Tensor& tensor, const std::string& label) {
  return checked_buffer(buffers_, names_, tensor, label).data.get();
}

float* CpuDevice::data(const Tensor& tensor) {
  std::lock_guard<std::mutex> lock(mutex_);
  return storage_locked(tensor, "data()");
}

std::map<std::string, std::vector<float>> CpuDevice::snapshot(
    const std::set<MemCategory>& categories) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::map<std::string, std::vector<float>> out;
  for (const auto& [id, buffer] : buffers_) {
    if (!categories.count(buffer.category)) continue;
    const std::string& name = names_.at(id);
    if (out.count(name)) throw std::logic_error("snapshot: two live tensors named '" + name + "'");
    out.emplace(name, std::vector<float>(buffer.data.get(), buffer.data.get() + buffer.numel));
  }
  return out;
}

std::vector<PlacedTensor> CpuDevice::placed_snapshot(const std::set<MemCategory>& categories) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<PlacedTensor> out;
  for (const auto& [id, buffer] : buffers_) {
    if (!categories.count(buffer.category)) continue;
    out.push_back({placement_locked(id), std::vector<float>(buffer.data.get(), buffer.data.get() + buffer.numel)});
  }
  return out;
}

std::set<std::string> CpuDevice::restore_global(const std::map<std::string, std::vector<float>>& global,
                                                const std::set<MemCategory>& categories) {
  std::lock_guard<std::mutex> lock(mutex_);
  // Check everything first: nothing is half-restored.
  std::vector<std::pair<Buffer*, TensorPlacement>> plan;
  for (auto& [id, buffer] : buffers_) {
    if (!categories.count(buffer.category)) continue;
    TensorPlacement p = placement_locked(id);
    restorable_values(global, p);
    plan.emplace_back(&buffer, std::move(p));
  }
  std::set<std::string> used;
  for (auto& [buffer, p] : plan) {
    extract_part(global.at(p.name), p, buffer->data.get(), buffer->numel);
    used.insert(p.name);
  }
  return used;
}

// ---------------------------------------------------------------- compute

Handle CpuDevice::compute(ComputeOp op, const Issue& issue) {
  check_aborted();
  if (issue.stream != Stream::compute)
    throw OpError(op.label, "the CPU backend runs compute ops on the compute stream only");
  for (const Handle& h : issue.after) wait_handle(h.id);
  wake_deferred_workers();  // the host moves on: queued communication runs beside it
  ++compute_ops_;
  const DeviceSettings& s = context_.settings();
  try {
    check_injection(op.label, iteration_);
    kernels::cpu::RunOptions options;
    options.seed = s.seed;
    options.iteration = iteration_;
    options.hidden_dropout = s.hidden_dropout;
    options.attention_dropout = s.attention_dropout;
    options.router_load = &router_load_;
    const kernels::cpu::TensorData data = [this, &op](const Tensor& t) {
      std::lock_guard<std::mutex> lock(mutex_);
      return storage_locked(t, op.label);
    };
    // Dropout masks are drawn from the label: use the global micro-batch index.
    I64 k = 0;
    std::size_t rest = 0;
    const bool has_mb = parse_micro_batch(op.label, k, rest);
    const double start = context_.now_s();
    if (micro_batch_offset_ != 0 && has_mb && draws_dropout(op)) {
      ComputeOp global = op;
      global.label = "mb" + std::to_string(k + micro_batch_offset_) + "." + op.label.substr(rest);
      kernels::cpu::run(global, data, options);
    } else {
      kernels::cpu::run(op, data, options);
    }
    // An injected straggler: the kernel takes `slowdown` times as long, its core kept busy.
    const double slowdown = static_cast<std::size_t>(rank_) < s.compute_slowdown.size() ? s.compute_slowdown[rank_] : 1;
    if (slowdown > 1)
      for (const double until = start + (context_.now_s() - start) * slowdown; context_.now_s() < until;) {
      }
    const double end = context_.now_s();
    compute_s_ += end - start;
    if (is_loss_mean(op)) {
      const float value = data(op.outputs[0])[0];
      std::lock_guard<std::mutex> lock(mutex_);
      losses_.push_back({iteration_, micro_batch_offset_ + (has_mb ? k : 0), value});
    }
    if (s.record_trace) {
      add_trace(op_trace_record(rank_, iteration_, op, Stream::compute, start, end));
    }
  } catch (const AbortedError&) {
    throw;
  } catch (const OpError&) {
    throw;
  } catch (const std::exception& e) {
    throw OpError(op.label, e.what());
  }
  return Handle{};  // the compute stream is the host's own timeline: complete once issued
}

void CpuDevice::add_trace(TraceRecord record) {
  std::lock_guard<std::mutex> lock(mutex_);
  trace_.push_back(std::move(record));
}

// ---------------------------------------------------------------- communication

Handle CpuDevice::communicate(CommOp op, const Issue& issue) {
  check_aborted();
  PendingComm pending;
  pending.after = issue.after;
  pending.stream = issue.stream;
  pending.iteration = iteration_;
  if (is_collective(op.kind)) {
    if (op.group.index_of(rank_) < 0)
      throw OpError(op.label, "rank " + std::to_string(rank_) + " is not in its group " +
                                  std::to_string(op.group.id));
    const std::string channel =
        "g" + std::to_string(op.group.id) + "s" + std::to_string(static_cast<int>(issue.stream));
    pending.key = channel + "#" + std::to_string(channel_instances_[channel]++);
  } else if (op.peer < 0 || op.peer >= world_size() || op.peer == rank_) {
    throw OpError(op.label, "bad peer " + std::to_string(op.peer));
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pending.handle = static_cast<std::int64_t>(ops_.size());
    ops_.push_back(OpState{false, false, op.label, {},
                           issue.stream == Stream::compute ? -1 : static_cast<int>(issue.stream)});
  }
  ++comm_ops_;
  pending.op = std::move(op);
  const std::int64_t handle = pending.handle;

  if (issue.stream == Stream::compute) {  // communication on the compute stream blocks the host
    try {
      for (const Handle& h : pending.after) wait_handle(h.id);
    } catch (...) {
      complete(handle, true);
      throw;
    }
    run_comm(pending);
    return Handle{handle};
  }
  // A send nobody waits for needs no thread (SharedMemoryComm::post_send).
  if (pending.op.kind == OpKind::send && try_post_send(pending)) return Handle{handle};
  {
    std::lock_guard<std::mutex> lock(mutex_);
    Worker& w = workers_[static_cast<int>(issue.stream)];
    if (w.last_handle >= 0 && !ops_[w.last_handle].done) pending.previous = w.last_handle;
    w.last_handle = handle;
    w.queue.push_back(std::move(pending));
    if (!w.thread.joinable()) {
      const Stream stream = issue.stream;
      w.thread = std::thread([this, stream] { worker_loop(stream); });
    }
    w.wake_pending = w.asleep;  // woken once the host moves on (Worker::wake_pending)
    queue_actionable_sleepers_locked();  // a worker waiting on this stream may run the op now
  }
  return Handle{handle};
}

namespace {
// [outer][size][inner] <-> [members][outer][size/members][inner] for blocks along `dim`, so that
// member i's block along dim is the i-th flat part (to_member_major = false: back).
void member_major(float* full, float* staged, const std::vector<I64>& shape, int dim, int members,
                  bool to_member_major) {
  I64 outer = 1, inner = 1;
  for (int d = 0; d < dim; ++d) outer *= shape[d];
  for (std::size_t d = static_cast<std::size_t>(dim) + 1; d < shape.size(); ++d) inner *= shape[d];
  const I64 size = shape[static_cast<std::size_t>(dim)], block = size / members;
  const auto bytes = sizeof(float) * static_cast<std::size_t>(block * inner);
  for (int m = 0; m < members; ++m)
    for (I64 o = 0; o < outer; ++o) {
      float* f = full + (o * size + m * block) * inner;
      float* st = staged + (m * outer + o) * block * inner;
      if (to_member_major) std::memcpy(st, f, bytes);
      else std::memcpy(f, st, bytes);
    }
}

// part <- src (or part += src when accumulating).
void write_part(float* part, const float* src, I64 n, bool accumulate) {
  if (!accumulate) {
    std::memcpy(part, src, sizeof(float) * static_cast<std::size_t>(n));
    return;
  }
  for (I64 i = 0; i < n; ++i) part[i] += src[i];
}
}  // namespace

void CpuDevice::sharded_collective(const CommOp& op, const std::string& key) {
  RankComm& comm = context_.comm();
  const int members = op.group.size(), me = op.group.index_of(rank_);
  const std::vector<Tensor> full = op.bucket.empty() ? std::vector<Tensor>{op.buffer} : op.bucket;
  const CommShards& parts = op.shards;
  if (parts.tensors.size() != full.size())
    throw std::logic_error("collective with " + std::to_string(full.size()) + " tensors and " +
                           std::to_string(parts.tensors.size()) + " parts");
  std::vector<float*> full_data, part_data;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (std::size_t j = 0; j < full.size(); ++j) {
      full_data.push_back(storage_locked(full[j], op.label));
      part_data.push_back(storage_locked(parts.tensors[j], op.label));
    }
  }
  const bool reduce = op.kind == OpKind::reduce_scatter;
  if (parts.dim >= 0) {  // blocks along a dimension: through a member-major staging copy
    if (full.size() != 1) throw std::logic_error("parts along a dimension need a single tensor");
    const Tensor& t = full[0];
    const I64 n = t.numel();
    if (parts.dim >= static_cast<int>(t.shape.size()) || t.shape[parts.dim] % members != 0 ||
        parts.tensors[0].numel() * members != n)
      throw std::logic_error("parts along dimension " + std::to_string(parts.dim) + " do not split the tensor");
    std::vector<float> staged(static_cast<std::size_t>(n));
    const FlatBuffer staged_view{Span{staged.data(), n}};
    const I64 block = n / members;
    if (reduce) {
      member_major(full_data[0], staged.data(), t.shape, parts.dim, members, true);
      comm.reduce_scatter(key, op.label, op.group, rank_, staged_view, op.reduce);
      write_part(part_data[0], staged.data() + me * block, block, parts.accumulate);
    } else {
      std::memcpy(staged.data() + me * block, part_data[0], sizeof(float) * static_cast<std::size_t>(block));
      comm.all_gather(key, op.label, op.group, rank_, staged_view);
      member_major(full_data[0], staged.data(), t.shape, parts.dim, members, false);
    }
    return;
  }
  // Element-wise parts of every tensor (the in-place collective's layout).
  FlatBuffer buffer;
  for (std::size_t j = 0; j < full.size(); ++j) buffer.push_back(Span{full_data[j], full[j].numel()});
  if (reduce) comm.reduce_scatter(key, op.label, op.group, rank_, buffer, op.reduce);
  for (std::size_t j = 0; j < full.size(); ++j) {
    const auto [lo, hi] = shard_range(full[j].numel(), members, me);
    if (parts.tensors[j].numel() < hi - lo)
      throw std::logic_error("part " + std::to_string(j) + " is smaller than its share");
    if (reduce) write_part(part_data[j], full_data[j] + lo, hi - lo, parts.accumulate);
    else std::memcpy(full_data[j] + lo, part_data[j], sizeof(float) * static_cast<std::size_t>(hi - lo));
  }
  if (!reduce) comm.all_gather(key, op.label, op.group, rank_, buffer);
}

FlatBuffer CpuDevice::flat_buffer(const CommOp& op) {
  std::lock_guard<std::mutex> lock(mutex_);
  FlatBuffer buffer;
  if (!op.bucket.empty()) {
    for (const Tensor& t : op.bucket) buffer.push_back(Span{storage_locked(t, op.label), t.numel()});
  } else {
    const auto [offset, count] = op.buffer_range();
    buffer.push_back(Span{storage_locked(op.buffer, op.label) + offset, count});
  }
  return buffer;
}

void CpuDevice::record_comm(const CommOp& op, Stream stream, int iteration, double start, double end) {
  std::lock_guard<std::mutex> lock(mutex_);
  comm_busy_s_ += end - start;
  if (!context_.settings().record_trace) return;
  trace_.push_back(op_trace_record(rank_, iteration, op, stream, start, end));
}

bool CpuDevice::try_post_send(const PendingComm& pending) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    Worker& w = workers_[static_cast<int>(pending.stream)];
    if (!w.queue.empty() || w.busy) return false;  // it would overtake the stream's earlier ops
    // An earlier posted send not yet copied: this one could complete first, and the stream's last
    // handle would then say done while that one is not (measured: a parameter server reused its
    // sums while a worker had not yet pulled them, 10 runs in 16 wrong under load).
    if (w.last_handle >= 0 && !ops_[w.last_handle].done) return false;
    for (const Handle& h : pending.after)
      if (h.valid() && !ops_[h.id].done) return false;
    w.last_handle = pending.handle;
  }
  const CommOp& op = pending.op;
  try {
    check_injection(op.label, pending.iteration);
  } catch (const std::exception& e) {
    complete(pending.handle, true);
    throw OpError(op.label, e.what());
  }
  const double start = context_.now_s();
  // Completed by whichever thread copies the message (this one, or the receiver's).
  context_.comm().post_send(rank_, op.peer, op.tag, op.label, flat_buffer(op),
                            [this, pending = pending, start](const std::string& error) {
    record_comm(pending.op, pending.stream, pending.iteration, start, context_.now_s());
    complete(pending.handle, !error.empty());
    if (!error.empty()) context_.fail(rank_, pending.op.label, error);
  });
  return true;
}

void CpuDevice::run_comm(PendingComm& pending) {
  const CommOp& op = pending.op;
  try {
    check_injection(op.label, pending.iteration);  // (iteration_ belongs to the host thread)
    RankComm& comm = context_.comm();
    const double start = context_.now_s();
    const bool out_of_place = (op.kind == OpKind::reduce_scatter || op.kind == OpKind::all_gather) &&
                              !op.shards.tensors.empty();
    const FlatBuffer buffer = out_of_place ? FlatBuffer{} : flat_buffer(op);
    if (out_of_place) sharded_collective(op, pending.key);
    else switch (op.kind) {
      case OpKind::all_reduce:
        comm.all_reduce(pending.key, op.label, op.group, rank_, buffer, op.reduce);
        break;
      case OpKind::reduce_scatter:
        comm.reduce_scatter(pending.key, op.label, op.group, rank_, buffer, op.reduce);
        break;
      case OpKind::all_gather:
        comm.all_gather(pending.key, op.label, op.group, rank_, buffer);
        break;
      case OpKind::broadcast:
        comm.broadcast(pending.key, op.label, op.group, rank_, buffer, op.root);
        break;
      case OpKind::all_to_all:
        comm.all_to_all(pending.key, op.label, op.group, rank_, buffer);
        break;
      case OpKind::send:
        comm.send(rank_, op.peer, op.tag, op.label, buffer);
        break;
      case OpKind::recv:
        comm.recv(op.peer, rank_, op.tag, op.label, buffer);
        break;
      default:
        throw std::logic_error(std::string("not a communication op: ") + to_string(op.kind));
    }
    record_comm(op, pending.stream, pending.iteration, start, context_.now_s());
    complete(pending.handle, false);
  } catch (const AbortedError&) {
    complete(pending.handle, true);
    throw;
  } catch (const std::exception& e) {
    complete(pending.handle, true);
    throw OpError(op.label, e.what());
  }
}

void CpuDevice::complete(std::int64_t handle, bool failed) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    OpState& state = ops_[handle];
    if (state.done) return;
    state.done = true;
    state.failed = failed;
    for (int id : state.release_on_completion) {
      if (buffers_.count(id)) release_locked(id);
      releasing_.erase(id);
    }
    state.release_on_completion.clear();
    queue_actionable_sleepers_locked();
  }
  op_done_.notify_all();
}

bool CpuDevice::actionable_locked(std::int64_t handle) const {
  const OpState& state = ops_[handle];
  if (state.done || context_.aborted()) return true;
  if (state.stream < 0) return false;
  const Worker& w = workers_[state.stream];
  return !w.busy && !w.queue.empty() && w.queue.front().handle <= handle;
}

void CpuDevice::queue_actionable_sleepers_locked() {
  for (HandleSleeper* s : handle_sleepers_)
    if (!s->core.queued && actionable_locked(s->handle)) s->core.queue();
}

void CpuDevice::worker_loop(Stream stream) {
  Worker& w = workers_[static_cast<int>(stream)];
  mark_stream_worker();  // before its Hold: it is not its rank's host
  const CoreGate::Hold hold(context_.gate(), rank_);
  while (true) {
    PendingComm pending;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      const auto ready = [&] { return stopping_ || (!w.queue.empty() && !w.busy); };
      // Re-checked after taking a core again: meanwhile the host may have run the op itself.
      while (!ready()) {
        // Off the core until work is queued: the host then queues this worker for a core, and
        // it wakes once it has one (core_gate.hpp: prepare_sleep).
        prepare_sleep(w.sleeper);
        w.asleep = true;
        lock.unlock();  // before the core goes: see leave_core
        leave_core([this](int r) { return r == rank_; });
        await_core(w.sleeper);
        lock.lock();
      }
      if (w.queue.empty()) return;  // stopping
      pending = std::move(w.queue.front());
      w.queue.pop_front();
      w.busy = true;
    }
    if (!run_queued(w, pending)) return;
  }
}

void CpuDevice::wake_deferred_workers(int except_stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  wake_deferred_workers_locked(except_stream);
}

void CpuDevice::wake_deferred_workers_locked(int except_stream) {
  for (int s = 0; s < kStreamCount; ++s) {
    Worker& w = workers_[s];
    if (s == except_stream || !w.wake_pending) continue;
    w.wake_pending = false;
    if (!w.queue.empty()) wake_worker_locked(w);
  }
}

void CpuDevice::wake_worker_locked(Worker& w) {
  w.wake_pending = false;
  if (!w.asleep) return;
  w.asleep = false;
  context_.gate().enqueue(w.sleeper, /*standby=*/true);
}

bool CpuDevice::run_queued(Worker& w, PendingComm& pending) {
  bool ok = true;
  try {
    if (pending.previous >= 0) wait_handle(pending.previous);  // in stream order (PendingComm::previous)
    for (const Handle& h : pending.after) wait_handle(h.id);
    run_comm(pending);
  } catch (const AbortedError&) {
    complete(pending.handle, true);
    ok = false;
  } catch (const OpError& e) {
    complete(pending.handle, true);
    context_.fail(rank_, e.label(), e.what());
    ok = false;
  } catch (const std::exception& e) {
    complete(pending.handle, true);
    context_.fail(rank_, pending.op.label, e.what());
    ok = false;
  }
  std::vector<std::int64_t> dropped;  // after a failure: nothing queued will ever run
  bool more = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    w.busy = false;
    if (!ok) {
      for (const PendingComm& p : w.queue) dropped.push_back(p.handle);
      w.queue.clear();
    }
    more = !w.queue.empty();
  }
  for (std::int64_t h : dropped) complete(h, true);
  if (more) {  // only then: every needless wake-up costs a core switch
    {
      std::lock_guard<std::mutex> lock(mutex_);
      wake_worker_locked(w);
      queue_actionable_sleepers_locked();  // a thread waiting for a later op of this stream may run it now
    }
    op_done_.notify_all();
  }
  return ok;
}

// ---------------------------------------------------------------- waiting

void CpuDevice::wait_handle(std::int64_t handle) {
  if (handle < 0) return;
  // A safety net behind the collectives' own timeouts (an op may queue behind others).
  const auto timeout = context_.settings().timeout;
  const auto deadline = std::chrono::steady_clock::now() + 2 * timeout + std::chrono::seconds(1);
  std::unique_lock<std::mutex> lock(mutex_);
  if (handle >= static_cast<std::int64_t>(ops_.size()))
    throw std::logic_error("wait on unknown handle " + std::to_string(handle));
  // The op is done, the run aborted, its queue may be run here, or time is up (under the lock).
  const auto actionable = [&] {
    return actionable_locked(handle) || std::chrono::steady_clock::now() >= deadline;
  };
  bool spun = false;
  while (true) {
    const OpState& state = ops_[handle];
    if (state.done) {
      if (state.failed) throw AbortedError("aborted: op " + state.label + " failed");
      return;
    }
    if (context_.aborted()) throw AbortedError("aborted: another rank failed");
    // Whatever else is queued runs beside this wait (Worker::wake_pending): the op waited for
    // may need a peer that first needs one of them (a pipeline's send before its receive).
    wake_deferred_workers_locked(state.stream);
    if (state.stream >= 0) {  // still queued, its stream idle: run the queue up to it here
      Worker& w = workers_[state.stream];
      if (!w.busy && !w.queue.empty() && w.queue.front().handle <= handle) {
        PendingComm pending = std::move(w.queue.front());
        w.queue.pop_front();
        w.busy = true;
        // Its worker, queued for a core for this op, has nothing left to do (core_gate.hpp).
        if (w.queue.empty() && !w.asleep && context_.gate().withdraw(w.sleeper)) w.asleep = true;
        lock.unlock();
        run_queued(w, pending);
        lock.lock();
        continue;
      }
    }
    if (std::chrono::steady_clock::now() >= deadline)
      throw OpError(state.label, "timed out after " + seconds_text(2 * timeout + std::chrono::seconds(1)) +
                                     " waiting for it to complete");
    const auto mine = [this](int r) { return r == rank_; };
    wake_deferred_workers_locked();  // this thread blocks: nothing queued may wait for it
    if (!spun) {  // as a collective's waits do (shared_memory_collectives.cpp)
      spun = true;
      spin_while_cores_idle(lock, actionable, std::chrono::microseconds(100));
      continue;
    }
    // Off the core until there is something to do (see actionable): queued for a core by the
    // thread that makes it so, or (a thread without a core) notified. The poll catches an abort.
    if (holds_core()) {
      HandleSleeper me;
      me.handle = handle;
      prepare_sleep(me.core.waiter);
      handle_sleepers_.push_back(&me);
      sleep_off_core_until(lock, me.core, std::min(deadline, std::chrono::steady_clock::now() + kPoll), mine,
                           [&] { std::erase(handle_sleepers_, &me); });
      continue;
    }
    while (!actionable()) op_done_.wait_for(lock, kPoll);
  }
}

void CpuDevice::wait(Handle handle) {
  check_aborted();
  wait_handle(handle.id);
}

Handle CpuDevice::record(Stream stream) {
  if (stream == Stream::compute) return Handle{};
  std::lock_guard<std::mutex> lock(mutex_);
  const std::int64_t h = workers_[static_cast<int>(stream)].last_handle;
  if (h < 0 || ops_[h].done) return Handle{};
  return Handle{h};
}

void CpuDevice::synchronize() {
  for (int s = 1; s < kStreamCount; ++s) wait_handle(record(static_cast<Stream>(s)).id);
}

void CpuDevice::begin_iteration(int iteration) {
  check_aborted();
  iteration_ = iteration;
  iteration_start_s_ = context_.now_s();
}

void CpuDevice::end_iteration() {
  synchronize();
  windows_.push_back({iteration_start_s_, context_.now_s()});
}

}  // namespace tandem::exec::cpu
