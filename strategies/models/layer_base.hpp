// Shared plumbing of the model layers (transformer, MLP): parameter allocation, per-micro-batch
// saved activations, labels, cross-stream dependencies, and the analytic figures.
//
// A layer's analytic figures (forward/backward FLOPs, saved activation bytes of one micro-batch)
// are measured by running a fresh copy of the layer once on a runtime that executes nothing:
// the op code is then the single source of truth, and the figures always agree with what the
// layer issues. Tests compare them with the published closed forms.
//
// Ownership convention for every layer (documented for strategies in model.hpp's terms):
//   forward(input) takes ownership of `input` (keeps it for backward or releases it) and returns
//   an output the caller owns; backward(grad_output) takes ownership of `grad_output` and
//   returns a gradient the caller owns. So a strategy passes one layer's output straight into
//   the next layer and never releases activations itself.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "strategies/model.hpp"
#include "strategies/ops.hpp"

namespace tandem::detail {

struct LayerFigures {
  Flops forward_flops = 0;
  Flops backward_flops = 0;   // including recomputation
  Bytes saved_activation_bytes = 0;  // activations held between forward and backward
  Bytes peak_forward_activation_bytes = 0;  // input + everything live at the worst moment
};

// A 1-byte-per-element buffer (dropout masks). DType has no 8-bit type, so it is stored as
// bf16 with half the elements: same bytes.
Tensor alloc_byte_mask(Runtime& rt, std::string_view name, std::int64_t numel);

// Issues ops of one forward/backward call of one layer: builds labels
// "mb{k}.{layer}.{what}.{suffix}", chains cross-stream dependencies (a communication op waits
// for the compute op that produced its buffer; the next compute op waits for the communication).
class Emitter {
 public:
  Emitter(Runtime& rt, std::string prefix) : rt_(rt), prefix_(std::move(prefix)) {}
  Runtime& rt() { return rt_; }
  std::string label(std::string_view what, std::string_view suffix) const;
  std::string name(std::string_view what) const;  // tensor names: "mb0.layer3.attn.qkv"

  // The Issue for the next compute op: on the compute stream, after pending communication.
  Issue compute_issue();
  Handle computed(Handle h) {  // record the compute op just issued
    last_ = h;
    return h;
  }
  // The Issue for a communication op on `stream`, after the last compute op (or, before this
  // layer issued any, after an event on the compute stream: the buffer came from earlier work).
  Issue comm_issue(Stream stream = Stream::tp_comm);
  // A communication op the next compute op must wait for.
  void pending(Handle h) {
    if (h.valid()) pending_.push_back(h);
  }
  // At the end of a layer's forward/backward: communication no compute op of the layer waited
  // for is waited for on the host, so the caller sees a finished output.
  void flush();
  void release(const Tensor& t) {
    if (t.valid()) rt_.release(t);
  }
  // Release of a buffer a communication op (on another stream) still reads.
  void release_after(const Tensor& t, Handle h) {
    if (!t.valid()) return;
    if (h.valid()) rt_.release_after(t, h);
    else rt_.release(t);
  }

 private:
  Runtime& rt_;
  std::string prefix_;
  Handle last_;
  std::vector<Handle> pending_;
};

class LayerBase : public Layer {
 public:
  LayerBase(std::string name, BatchShape batch, ParallelContext ctx)
      : name_(std::move(name)), batch_(batch), ctx_(std::move(ctx)) {}

  std::string name() const override { return name_; }
  const std::vector<Tensor>& parameters() const override { return params_; }
  const std::vector<Tensor>& gradients() const override { return grads_; }
  const std::vector<TensorPlacement>& placements() const override { return placements_; }

  Flops forward_flops() const override { return figures().forward_flops; }
  Flops backward_flops() const override { return figures().backward_flops; }
  Bytes saved_activation_bytes() const override { return figures().saved_activation_bytes; }
  Bytes peak_forward_activation_bytes() const {
    return figures().peak_forward_activation_bytes;
  }
  const LayerFigures& figures() const;

  const BatchShape& batch() const { return batch_; }
  const ParallelContext& parallel() const { return ctx_; }
  // Micro-batches whose forward has run and whose backward has not.
  std::vector<int> micro_batches_in_flight() const;

 protected:
  // A copy of this layer with nothing allocated (for measuring the figures).
  virtual std::unique_ptr<LayerBase> fresh_copy() const = 0;
  // A forward input of one micro-batch, allocated as an activation.
  virtual Tensor make_measure_input(Runtime& rt) const = 0;

  // Allocates a parameter in batch.param_dtype (and its gradient in grad_dtype, zero-filled by
  // the backend, when with_gradients), appends them to params_/grads_ and places it
  // (`placement`; default: the whole logical tensor "<layer>.<what>").
  Tensor add_parameter(Runtime& rt, const std::string& what, std::vector<std::int64_t> shape,
                       bool with_gradients, Tensor* grad, TensorPlacement placement = {});

  // At the start of allocate(): forgets the tensors of an earlier allocation (a layer may be
  // allocated again, on another runtime).
  void clear_parameters() {
    params_.clear();
    placements_.clear();
    grads_.clear();
  }

  std::string prefix(int micro_batch) const;  // "mb{k}.{name}."
  Emitter emitter(Runtime& rt, int micro_batch) const { return Emitter(rt, prefix(micro_batch)); }

  void save(int micro_batch, const std::string& key, const Tensor& t);
  Tensor take(int micro_batch, const std::string& key);  // throws std::logic_error if absent
  bool has_saved(int micro_batch, const std::string& key) const;
  void finish_micro_batch(int micro_batch);  // checks nothing was left behind

  std::string name_;
  BatchShape batch_;
  ParallelContext ctx_;
  std::vector<Tensor> params_;
  std::vector<Tensor> grads_;
  std::vector<TensorPlacement> placements_;

 private:
  std::map<int, std::map<std::string, Tensor>> saved_;
  mutable std::optional<LayerFigures> figures_;
};

}  // namespace tandem::detail
