#include "strategies/models/layer_base.hpp"

#include <algorithm>
#include <stdexcept>
#include <unordered_map>

namespace tandem::detail {
namespace {

// Executes nothing; sums FLOPs and tracks activation bytes (current and peak).
class CountingRuntime final : public Runtime {
 public:
  int rank() const override { return 0; }
  int world_size() const override { return 1; }
  // A cost model: dropless experts at their expected load (Runtime::dropless_expert_rows).
  std::int64_t dropless_expert_rows(std::int64_t, std::int64_t expected_rows) const override { return expected_rows; }
  Tensor alloc(std::string_view, std::vector<std::int64_t> shape, DType dtype,
               MemCategory category) override {
    Tensor t;
    t.id = next_id_++;
    t.shape = std::move(shape);
    t.dtype = dtype;
    if (category == MemCategory::activations) {
      live_[t.id] = t.bytes();
      activations_ += t.bytes();
      peak_ = std::max(peak_, activations_);
    }
    return t;
  }
  void release(const Tensor& t) override {
    auto it = live_.find(t.id);
    if (it == live_.end()) return;
    activations_ -= it->second;
    live_.erase(it);
  }
  // Layers never reacquire; only activations are counted here.
  void reacquire(const Tensor&, MemCategory) override {}
  Handle compute(ComputeOp op, const Issue&) override {
    flops_ += op.flops;
    return Handle{ops_++};
  }
  Handle communicate(CommOp, const Issue&) override { return Handle{ops_++}; }
  void wait(Handle) override {}
  Handle record(Stream) override { return Handle{}; }
  void synchronize() override {}
  void begin_iteration(int) override {}
  void end_iteration() override {}

  Flops flops_ = 0;
  Bytes activations_ = 0;
  Bytes peak_ = 0;

 private:
  std::int32_t next_id_ = 0;
  std::int64_t ops_ = 0;
  std::unordered_map<std::int32_t, Bytes> live_;
};

}  // namespace

Tensor alloc_byte_mask(Runtime& rt, std::string_view name, std::int64_t numel) {
  return rt.alloc(name, {(numel + 1) / 2}, DType::bf16, MemCategory::activations);
}

std::string Emitter::label(std::string_view what, std::string_view suffix) const {
  std::string out = prefix_;
  out += what;
  out += '.';
  out += suffix;
  return out;
}

std::string Emitter::name(std::string_view what) const { return prefix_ + std::string(what); }

Issue Emitter::compute_issue() {
  Issue issue{Stream::compute, std::move(pending_)};
  pending_.clear();
  return issue;
}

Issue Emitter::comm_issue(Stream stream) {
  Issue issue{stream, {}};
  if (!last_.valid()) last_ = rt_.record(Stream::compute);
  if (last_.valid()) issue.after.push_back(last_);
  return issue;
}

void Emitter::flush() {
  for (const auto& h : pending_) rt_.wait(h);
  pending_.clear();
}

const LayerFigures& LayerBase::figures() const {
  if (figures_) return *figures_;
  auto copy = fresh_copy();
  CountingRuntime crt;
  copy->allocate(crt, /*with_gradients=*/true);
  const Tensor input = copy->make_measure_input(crt);
  crt.peak_ = crt.activations_;
  const Tensor output = copy->forward(crt, input, 0);
  LayerFigures f;
  f.forward_flops = crt.flops_;
  f.saved_activation_bytes = crt.activations_ - output.bytes();
  f.peak_forward_activation_bytes = crt.peak_;
  crt.release(output);
  Tensor grad = crt.alloc("grad", output.shape, output.dtype, MemCategory::activations);
  const Flops before = crt.flops_;
  const Tensor grad_input = copy->backward(crt, grad, 0);
  f.backward_flops = crt.flops_ - before;
  if (grad_input.valid()) crt.release(grad_input);
  figures_ = f;
  return *figures_;
}

std::vector<int> LayerBase::micro_batches_in_flight() const {
  std::vector<int> out;
  for (const auto& [mb, saved] : saved_)
    if (!saved.empty()) out.push_back(mb);
  return out;
}

Tensor LayerBase::add_parameter(Runtime& rt, const std::string& what,
                                std::vector<std::int64_t> shape, bool with_gradients,
                                Tensor* grad, TensorPlacement placement) {
  Tensor p = rt.alloc(name_ + "." + what, shape, batch_.param_dtype, MemCategory::parameters);
  params_.push_back(p);
  if (placement.name.empty()) placement = whole_tensor(name_ + "." + what, shape);
  rt.place(p, placement);
  placements_.push_back(std::move(placement));
  Tensor g;
  if (with_gradients && batch_.autocast) {
    // PyTorch AMP's 16-bit copy of the fp32 weight (GemmArgs::WeightPass::weight_cast): made at
    // the weight's first use in a micro-batch and kept for its backward, so at the end of a
    // forward every weight has one (and PyTorch's caching allocator keeps the memory between
    // micro-batches). Counted with the parameters; no op reads it.
    rt.alloc(name_ + "." + what + ".amp_copy", shape, batch_.dtype, MemCategory::parameters);
  }
  if (with_gradients) {
    g = rt.alloc(name_ + "." + what + ".grad", std::move(shape), batch_.grad_dtype,
                 MemCategory::gradients);
    grads_.push_back(g);
  }
  if (grad) *grad = g;
  return p;
}

std::string LayerBase::prefix(int micro_batch) const {
  return "mb" + std::to_string(micro_batch) + "." + name_ + ".";
}

void LayerBase::save(int micro_batch, const std::string& key, const Tensor& t) {
  auto& slot = saved_[micro_batch][key];
  if (slot.valid())
    throw std::logic_error(name_ + ": micro-batch " + std::to_string(micro_batch) +
                           " already holds '" + key + "' (forward run twice?)");
  slot = t;
}

Tensor LayerBase::take(int micro_batch, const std::string& key) {
  auto mb = saved_.find(micro_batch);
  if (mb == saved_.end())
    throw std::logic_error(name_ + ": backward of micro-batch " + std::to_string(micro_batch) +
                           " without its forward");
  auto it = mb->second.find(key);
  if (it == mb->second.end())
    throw std::logic_error(name_ + ": micro-batch " + std::to_string(micro_batch) +
                           " has no saved '" + key + "'");
  Tensor t = it->second;
  mb->second.erase(it);
  return t;
}

bool LayerBase::has_saved(int micro_batch, const std::string& key) const {
  auto mb = saved_.find(micro_batch);
  return mb != saved_.end() && mb->second.count(key) != 0;
}

void LayerBase::finish_micro_batch(int micro_batch) {
  auto mb = saved_.find(micro_batch);
  if (mb == saved_.end()) return;
  if (!mb->second.empty()) {
    std::string left;
    for (const auto& [key, t] : mb->second) left += " " + key;
    throw std::logic_error(name_ + ": micro-batch " + std::to_string(micro_batch) +
                           " backward left saved tensors behind:" + left);
  }
  saved_.erase(mb);
}

}  // namespace tandem::detail
