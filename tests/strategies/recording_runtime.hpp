// A test double for the per-rank interface: executes nothing, assigns tensor ids, records every
// op (kind, label, FLOPs, bytes, phase, stream, dependencies, group/peer) and tracks the current
// and peak allocated bytes per memory category. Strategies' and models' tests drive layers
// through it and assert on what was issued.
//
// Every op completes at once: handles are op sequence numbers (index into ops()), events
// recorded with record() have ids from kEventIdBase up; wait() only records. Releasing a
// tensor that is not live (double release, never allocated) is recorded as an error rather than
// thrown, so a test can report all of them: check errors() is empty.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "strategies/runtime.hpp"

namespace tandem::testing {

struct RecordedOp {
  std::int64_t id = -1;  // the handle id
  bool is_comm = false;
  OpKind kind = OpKind::gemm;
  Phase phase = Phase::other;
  std::string label;
  Flops flops = 0;
  Bytes bytes = 0;
  Stream stream = Stream::compute;
  std::vector<Handle> after;
  int iteration = -1;
  // compute
  KernelArgs args;
  std::vector<Tensor> inputs, outputs;
  DType compute_dtype = DType::bf16;
  // communication
  Tensor buffer;
  std::vector<Tensor> bucket;
  int group_id = -1;
  std::vector<int> group_ranks;
  int peer = -1;
  int root = -1;
  ReduceOp reduce = ReduceOp::sum;
  int tag = 0;
};

struct RecordedEvent {
  Stream stream = Stream::compute;
  std::int64_t last_op_on_stream = -1;
};

struct LiveTensor {
  std::string name;
  Tensor tensor;
  MemCategory category = MemCategory::activations;
};

class RecordingRuntime : public Runtime {
 public:
  explicit RecordingRuntime(int rank = 0, int world_size = 1)
      : rank_(rank), world_size_(world_size) {}

  int rank() const override { return rank_; }
  int world_size() const override { return world_size_; }

  Tensor alloc(std::string_view name, std::vector<std::int64_t> shape, DType dtype,
               MemCategory category) override {
    Tensor t;
    t.id = next_tensor_id_++;
    t.shape = std::move(shape);
    t.dtype = dtype;
    const auto c = static_cast<int>(category);
    current_[c] += t.bytes();
    peak_[c] = std::max(peak_[c], current_[c]);
    total_ += t.bytes();
    peak_total_ = std::max(peak_total_, total_);
    live_[t.id] = LiveTensor{std::string(name), t, category};
    names_ever_[t.id] = std::string(name);
    ++allocations_;
    return t;
  }

  void reacquire(const Tensor& tensor, MemCategory category) override {
    if (live_.count(tensor.id)) {
      errors_.push_back("reacquire of a live tensor: id " + std::to_string(tensor.id));
      return;
    }
    const auto c = static_cast<int>(category);
    current_[c] += tensor.bytes();
    peak_[c] = std::max(peak_[c], current_[c]);
    total_ += tensor.bytes();
    peak_total_ = std::max(peak_total_, total_);
    live_[tensor.id] = LiveTensor{names_ever_[tensor.id], tensor, category};
  }

  void release(const Tensor& tensor) override {
    auto it = live_.find(tensor.id);
    if (it == live_.end()) {
      auto named = names_ever_.find(tensor.id);
      errors_.push_back("release of a tensor that is not live: id " + std::to_string(tensor.id) +
                        (named != names_ever_.end() ? " ('" + named->second + "')" : ""));
      return;
    }
    const auto c = static_cast<int>(it->second.category);
    current_[c] -= it->second.tensor.bytes();
    total_ -= it->second.tensor.bytes();
    live_.erase(it);
    ++releases_;
  }

  Handle compute(ComputeOp op, const Issue& issue = {}) override {
    RecordedOp r;
    r.id = static_cast<std::int64_t>(ops_.size());
    r.kind = op.kind;
    r.phase = op.phase;
    r.label = std::move(op.label);
    r.flops = op.flops;
    r.bytes = op.bytes;
    r.stream = issue.stream;
    r.after = issue.after;
    r.iteration = iteration_;
    r.args = op.args;
    r.inputs = std::move(op.inputs);
    r.outputs = std::move(op.outputs);
    r.compute_dtype = op.compute_dtype;
    ops_.push_back(std::move(r));
    return Handle{ops_.back().id};
  }

  Handle communicate(CommOp op, const Issue& issue = {}) override {
    RecordedOp r;
    r.id = static_cast<std::int64_t>(ops_.size());
    r.is_comm = true;
    r.kind = op.kind;
    r.phase = op.phase;
    r.label = std::move(op.label);
    r.bytes = op.bytes;
    r.stream = issue.stream;
    r.after = issue.after;
    r.iteration = iteration_;
    r.buffer = op.buffer;
    r.bucket = std::move(op.bucket);
    r.group_id = op.group.id;
    r.group_ranks = op.group.ranks;
    r.peer = op.peer;
    r.root = op.root;
    r.reduce = op.reduce;
    r.tag = op.tag;
    ops_.push_back(std::move(r));
    return Handle{ops_.back().id};
  }

  void wait(Handle handle) override {
    if (handle.valid()) waited_.push_back(handle.id);
  }
  // An event gets an id of its own (kEventIdBase + index into events()), so a test can tell
  // which stream a dependency stood for; `last_op_on_stream` is the op it covers (-1: none).
  static constexpr std::int64_t kEventIdBase = std::int64_t{1} << 40;
  Handle record(Stream stream) override {
    std::int64_t last = -1;
    for (const auto& op : ops_)
      if (op.stream == stream) last = op.id;
    events_.push_back(RecordedEvent{stream, last});
    return Handle{kEventIdBase + static_cast<std::int64_t>(events_.size()) - 1};
  }
  static bool is_event(Handle h) { return h.id >= kEventIdBase; }
  void synchronize() override { ++synchronizations_; }
  void begin_iteration(int iteration) override { iteration_ = iteration; }
  void end_iteration() override { ++iterations_ended_; }

  // ---- what was recorded ----
  const std::vector<RecordedOp>& ops() const { return ops_; }
  void clear_ops() { ops_.clear(); waited_.clear(); }
  std::vector<const RecordedOp*> ops_where(const std::function<bool(const RecordedOp&)>& f) const {
    std::vector<const RecordedOp*> out;
    for (const auto& op : ops_)
      if (f(op)) out.push_back(&op);
    return out;
  }
  std::vector<const RecordedOp*> ops_of_kind(OpKind kind) const {
    return ops_where([kind](const RecordedOp& op) { return op.kind == kind; });
  }
  const RecordedOp* find_op(std::string_view label) const {
    for (const auto& op : ops_)
      if (op.label == label) return &op;
    return nullptr;
  }
  Flops total_flops() const {
    Flops f = 0;
    for (const auto& op : ops_) f += op.flops;
    return f;
  }
  Flops total_flops(Phase phase) const {
    Flops f = 0;
    for (const auto& op : ops_)
      if (op.phase == phase) f += op.flops;
    return f;
  }
  Flops total_flops(OpKind kind) const {
    Flops f = 0;
    for (const auto& op : ops_)
      if (op.kind == kind) f += op.flops;
    return f;
  }
  Bytes total_comm_bytes(OpKind kind) const {
    Bytes b = 0;
    for (const auto& op : ops_)
      if (op.is_comm && op.kind == kind) b += op.bytes;
    return b;
  }
  // Labels that occur more than once (empty when every label is unique).
  std::vector<std::string> duplicate_labels() const {
    std::set<std::string> seen, dup;
    for (const auto& op : ops_)
      if (!seen.insert(op.label).second) dup.insert(op.label);
    return {dup.begin(), dup.end()};
  }
  const std::vector<std::int64_t>& waited() const { return waited_; }
  const std::vector<RecordedEvent>& events() const { return events_; }
  int synchronizations() const { return synchronizations_; }
  int iteration() const { return iteration_; }

  // ---- memory ----
  Bytes current_bytes(MemCategory c) const { return current_[static_cast<int>(c)]; }
  Bytes peak_bytes(MemCategory c) const { return peak_[static_cast<int>(c)]; }
  Bytes current_total_bytes() const { return total_; }
  Bytes peak_total_bytes() const { return peak_total_; }
  void reset_peaks() {
    peak_ = current_;
    peak_total_ = total_;
  }
  const std::unordered_map<std::int32_t, LiveTensor>& live_tensors() const { return live_; }
  std::size_t live_count() const { return live_.size(); }
  std::size_t live_count(MemCategory c) const {
    return static_cast<std::size_t>(std::count_if(
        live_.begin(), live_.end(), [c](const auto& kv) { return kv.second.category == c; }));
  }
  // Names of live tensors in a category, sorted (handy in failure messages).
  std::vector<std::string> live_names(MemCategory c) const {
    std::vector<std::string> out;
    for (const auto& [id, t] : live_)
      if (t.category == c) out.push_back(t.name);
    std::sort(out.begin(), out.end());
    return out;
  }
  bool is_live(const Tensor& t) const { return live_.count(t.id) != 0; }
  std::string name_of(const Tensor& t) const {
    auto it = names_ever_.find(t.id);
    return it == names_ever_.end() ? std::string() : it->second;
  }
  std::int64_t allocations() const { return allocations_; }
  std::int64_t releases() const { return releases_; }
  const std::vector<std::string>& errors() const { return errors_; }

 private:
  int rank_;
  int world_size_;
  std::int32_t next_tensor_id_ = 0;
  std::array<Bytes, kMemCategoryCount> current_{};
  std::array<Bytes, kMemCategoryCount> peak_{};
  Bytes total_ = 0;
  Bytes peak_total_ = 0;
  std::unordered_map<std::int32_t, LiveTensor> live_;
  std::map<std::int32_t, std::string> names_ever_;
  std::int64_t allocations_ = 0;
  std::int64_t releases_ = 0;
  std::vector<std::string> errors_;
  std::vector<RecordedOp> ops_;
  std::vector<std::int64_t> waited_;
  std::vector<RecordedEvent> events_;
  int synchronizations_ = 0;
  int iteration_ = -1;
  int iterations_ended_ = 0;
};

}  // namespace tandem::testing
