// Helpers shared by the model tests: run micro-batches of a model's layers through a
// RecordingRuntime.
#pragma once

#include <memory>
#include <vector>

#include "strategies/model.hpp"
#include "tests/strategies/recording_runtime.hpp"

namespace tandem::testing {

using Layers = std::vector<std::unique_ptr<Layer>>;

inline void allocate_all(RecordingRuntime& rt, Layers& layers, bool with_gradients = true) {
  for (auto& l : layers) l->allocate(rt, with_gradients);
}

inline Tensor forward_all(RecordingRuntime& rt, const Model& model, Layers& layers,
                          const BatchShape& batch, int mb) {
  Tensor t = model.make_input(rt, batch, mb);
  for (auto& l : layers) t = l->forward(rt, t, mb);
  return t;
}

inline Tensor backward_all(RecordingRuntime& rt, Layers& layers, Tensor grad, int mb) {
  for (auto it = layers.rbegin(); it != layers.rend(); ++it) grad = (*it)->backward(rt, grad, mb);
  return grad;
}

// One micro-batch forward and backward over all layers.
inline void run_micro_batch(RecordingRuntime& rt, const Model& model, Layers& layers,
                            const BatchShape& batch, int mb) {
  Tensor loss = forward_all(rt, model, layers, batch, mb);
  Tensor g = backward_all(rt, layers, loss, mb);
  if (g.valid()) rt.release(g);
}

// One sequence of 64 tokens: a micro-batch small enough to record a whole model's ops quickly.
inline BatchShape short_batch() {
  BatchShape batch;
  batch.micro_batch = 1;
  batch.seq_len = 64;
  return batch;
}

// The GEMMs one micro-batch of `model` issues on a single rank, in order.
inline std::vector<RecordedOp> gemms_of_one_micro_batch(const Model& model, const BatchShape& batch) {
  RecordingRuntime rt;
  Layers layers = model.build_layers(batch, ParallelContext{});
  allocate_all(rt, layers);
  run_micro_batch(rt, model, layers, batch, 0);
  std::vector<RecordedOp> gemms;
  for (const RecordedOp& op : rt.ops())
    if (!op.is_comm && op.kind == OpKind::gemm) gemms.push_back(op);
  return gemms;
}

}  // namespace tandem::testing
