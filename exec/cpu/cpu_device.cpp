#include "exec/cpu/cpu_device.hpp"

#include <algorithm>
#include <cstring>
#include <variant>

#include "exec/common/op_labels.hpp"
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
    : world_(world_size),
      settings_(std::move(settings)),
      comm_(settings_.timeout),
      epoch_(std::chrono::steady_clock::now()) {}

double CpuRunContext::now_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - epoch_).count();
}

void CpuRunContext::fail(int rank, const std::string& op_label, const std::string& message) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (failure_.empty()) {
      failure_ = "rank " + std::to_string(rank) + " failed" +
                 (op_label.empty() ? std::string() : " in op " + op_label) + ": " + message;
    }
  }
  comm_.abort();
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
  }
  has_work_.notify_all();
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
  Buffer buffer{std::unique_ptr<float[]>(new float[static_cast<std::size_t>(std::max<I64>(n, 1))]()),
                n, category};
  memory_.allocate(t.id, t.bytes(), category);
  names_[t.id] = std::string(name);
  float* data = buffer.data.get();
  buffers_.emplace(t.id, std::move(buffer));
  lock.unlock();

  const DeviceSettings& s = context_.settings();
  if (category == MemCategory::parameters) {
    init_parameter(name, data, n, s.seed, s.init_std);
  } else if (category == MemCategory::optimizer_state && ends_with(name, ".master")) {
    lock.lock();
    masters_to_fill_.insert(t.id);
  } else if (category == MemCategory::activations && s.data && iteration_ >= 0) {
    I64 k = 0;
    std::string_view role;
    if (parse_data_name(name, k, role)) {
      DataPosition at{iteration_, micro_batch_offset_ + k, s.sequences_per_iteration};
      s.data->fill(role, t, data, at);
    }
  }
  return t;
}

void CpuDevice::release_locked(int tensor_id) {
  memory_.release(tensor_id);  // unknown ids: std::logic_error
  auto it = buffers_.find(tensor_id);
  // Activations are never reacquired: forget their names (a run allocates thousands per step).
  if (it != buffers_.end() && it->second.category == MemCategory::activations) names_.erase(tensor_id);
  buffers_.erase(tensor_id);
  masters_to_fill_.erase(tensor_id);
}

void CpuDevice::release(const Tensor& tensor) {
  std::lock_guard<std::mutex> lock(mutex_);
  release_locked(tensor.id);
}

void CpuDevice::reacquire(const Tensor& tensor, MemCategory category) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (buffers_.count(tensor.id))
    throw std::logic_error("reacquire of tensor " + std::to_string(tensor.id) +
                           ", which is still allocated");
  const I64 n = tensor.numel();
  buffers_.emplace(tensor.id,
                   Buffer{std::unique_ptr<float[]>(new float[static_cast<std::size_t>(std::max<I64>(n, 1))]()),
                          n, category});
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
}

float* CpuDevice::storage_locked(const Tensor& tensor, const std::string& label) {
  auto it = buffers_.find(tensor.id);
  if (it == buffers_.end()) {
    auto name = names_.find(tensor.id);
    throw std::logic_error("op " + label + ": tensor " + std::to_string(tensor.id) +
                           (name != names_.end() ? " '" + name->second + "'" : std::string()) +
                           " is not allocated (released too early?)");
  }
  if (it->second.numel < tensor.numel())
    throw std::logic_error("op " + label + ": tensor " + std::to_string(tensor.id) +
                           " is smaller than its handle says");
  return it->second.data.get();
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

void CpuDevice::restore(const std::map<std::string, std::vector<float>>& values,
                        const std::set<MemCategory>& categories) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::pair<Buffer*, const std::vector<float>*>> plan;
  std::size_t matched = 0;
  for (auto& [id, buffer] : buffers_) {
    if (!categories.count(buffer.category)) continue;
    const std::string& name = names_.at(id);
    auto it = values.find(name);
    if (it == values.end()) throw std::runtime_error("the checkpoint has no tensor '" + name + "'");
    if (static_cast<I64>(it->second.size()) != buffer.numel)
      throw std::runtime_error("the checkpoint's '" + name + "' has " + std::to_string(it->second.size()) +
                               " values, this run's has " + std::to_string(buffer.numel));
    plan.emplace_back(&buffer, &it->second);
    ++matched;
  }
  if (matched != values.size()) {
    for (const auto& [name, v] : values) {
      bool live = false;
      for (const auto& [id, buffer] : buffers_)
        if (categories.count(buffer.category) && names_.at(id) == name) live = true;
      if (!live) throw std::runtime_error("the checkpoint's tensor '" + name + "' has no counterpart in this run");
    }
  }
  for (auto& [buffer, v] : plan) std::copy(v->begin(), v->end(), buffer->data.get());
  for (const auto& [id, buffer] : buffers_)
    if (categories.count(buffer.category)) masters_to_fill_.erase(id);
}

// ---------------------------------------------------------------- compute

Handle CpuDevice::compute(ComputeOp op, const Issue& issue) {
  check_aborted();
  if (issue.stream != Stream::compute)
    throw OpError(op.label, "the CPU backend runs compute ops on the compute stream only");
  for (const Handle& h : issue.after) wait_handle(h.id);
  ++compute_ops_;
  const DeviceSettings& s = context_.settings();
  try {
    check_injection(op.label, iteration_);
    // The fp32 master copy starts as the parameter (the first optimizer op that uses it).
    if (op.kind == OpKind::optimizer && op.inputs.size() == 5) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (masters_to_fill_.erase(op.inputs[2].id)) {
        const float* param = storage_locked(op.inputs[0], op.label);
        float* master = storage_locked(op.inputs[2], op.label);
        const I64 n = std::min(op.inputs[0].numel(), op.inputs[2].numel());
        std::copy(param, param + n, master);
      }
    }
    kernels::cpu::RunOptions options;
    options.seed = s.seed;
    options.iteration = iteration_;
    options.hidden_dropout = s.hidden_dropout;
    options.attention_dropout = s.attention_dropout;
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
    const double end = context_.now_s();
    compute_s_ += end - start;
    if (is_loss_mean(op)) {
      const float value = data(op.outputs[0])[0];
      std::lock_guard<std::mutex> lock(mutex_);
      losses_.push_back({iteration_, micro_batch_offset_ + (has_mb ? k : 0), value});
    }
    if (s.record_trace) {
      TraceRecord r;
      r.rank = rank_;
      r.iteration = iteration_;
      r.op_id = op.label;
      r.kind = op.kind;
      r.phase = op.phase;
      r.stream = Stream::compute;
      r.start_s = start;
      r.end_s = end;
      r.flops = op.flops;
      r.bytes = op.bytes;
      add_trace(std::move(r));
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
    ops_.push_back(OpState{false, false, op.label, {}});
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
  {
    std::lock_guard<std::mutex> lock(mutex_);
    Worker& w = workers_[static_cast<int>(issue.stream)];
    w.last_handle = handle;
    w.queue.push_back(std::move(pending));
    if (!w.thread.joinable()) {
      const Stream stream = issue.stream;
      w.thread = std::thread([this, stream] { worker_loop(stream); });
    }
  }
  has_work_.notify_all();
  return Handle{handle};
}

FlatBuffer CpuDevice::flat_buffer(const CommOp& op) {
  std::lock_guard<std::mutex> lock(mutex_);
  FlatBuffer buffer;
  if (!op.bucket.empty()) {
    for (const Tensor& t : op.bucket) buffer.push_back(Span{storage_locked(t, op.label), t.numel()});
  } else {
    buffer.push_back(Span{storage_locked(op.buffer, op.label), op.buffer.numel()});
  }
  return buffer;
}

void CpuDevice::run_comm(PendingComm& pending) {
  const CommOp& op = pending.op;
  try {
    check_injection(op.label, pending.iteration);  // (iteration_ belongs to the host thread)
    const FlatBuffer buffer = flat_buffer(op);
    SharedMemoryComm& comm = context_.comm();
    const double start = context_.now_s();
    switch (op.kind) {
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
    const double end = context_.now_s();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      comm_busy_s_ += end - start;
      if (context_.settings().record_trace) {
        TraceRecord r;
        r.rank = rank_;
        r.iteration = pending.iteration;
        r.op_id = op.label;
        r.kind = op.kind;
        r.phase = op.phase;
        r.stream = pending.stream;
        r.start_s = start;
        r.end_s = end;
        r.bytes = op.bytes;
        if (is_collective(op.kind)) {
          r.group_id = op.group.id;
          r.group_size = op.group.size();
        } else {
          r.peer = op.peer;
        }
        trace_.push_back(std::move(r));
      }
    }
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
    }
    state.release_on_completion.clear();
  }
  op_done_.notify_all();
}

void CpuDevice::worker_loop(Stream stream) {
  Worker& w = workers_[static_cast<int>(stream)];
  auto fail_queue = [&] {  // after a failure: nothing queued will ever run
    std::vector<std::int64_t> handles;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (const PendingComm& p : w.queue) handles.push_back(p.handle);
      w.queue.clear();
    }
    for (std::int64_t h : handles) complete(h, true);
  };
  while (true) {
    PendingComm pending;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      has_work_.wait(lock, [&] { return stopping_ || !w.queue.empty(); });
      if (w.queue.empty()) return;  // stopping
      pending = std::move(w.queue.front());
      w.queue.pop_front();
    }
    try {
      for (const Handle& h : pending.after) wait_handle(h.id);
      run_comm(pending);
    } catch (const AbortedError&) {
      complete(pending.handle, true);
      fail_queue();
      return;
    } catch (const OpError& e) {
      complete(pending.handle, true);
      context_.fail(rank_, e.label(), e.what());
      fail_queue();
      return;
    } catch (const std::exception& e) {
      complete(pending.handle, true);
      context_.fail(rank_, pending.op.label, e.what());
      fail_queue();
      return;
    }
  }
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
  while (true) {
    const OpState& state = ops_[handle];
    if (state.done) {
      if (state.failed) throw AbortedError("aborted: op " + state.label + " failed");
      return;
    }
    if (context_.aborted()) throw AbortedError("aborted: another rank failed");
    if (std::chrono::steady_clock::now() >= deadline)
      throw OpError(state.label, "timed out after " + seconds_text(2 * timeout + std::chrono::seconds(1)) +
                                     " waiting for it to complete");
    op_done_.wait_for(lock, kPoll);
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
