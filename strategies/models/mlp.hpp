// A multi-layer perceptron classifier written against the per-rank interface: the smallest
// model that exercises every part of a strategy (GEMMs, element-wise ops, a loss, gradients).
//
// Layers (name() in quotes): "fc{i}" = Linear(in → hidden_sizes[i]) + activation, then
// "head" = Linear(→ output_size) + softmax cross-entropy (returns the loss [1]). A micro-batch is
// micro_batch samples of input_size features (BatchShape::seq_len is ignored); "tokens" in
// ModelDescription are samples. Same ownership, label ("mb{k}.fc0.linear.fwd") and weight
// layout ([in, out]) conventions as the transformer. Tensor parallelism is not supported
// (build_layers throws for tp_size > 1); recomputation is ignored.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "strategies/model.hpp"
#include "strategies/models/transformer.hpp"

namespace tandem {

struct MlpConfig {
  std::string name = "mlp";
  std::int64_t input_size = 0;
  std::vector<std::int64_t> hidden_sizes;
  std::int64_t output_size = 0;  // classes
  ActivationType activation = ActivationType::gelu;  // only gelu is supported
  bool bias = true;
};

void validate(const MlpConfig& cfg);  // throws std::invalid_argument naming the field
std::int64_t parameter_count(const MlpConfig& cfg);
// 6·(weights) per sample, forward + backward (biases and activations aside).
Flops model_flops_per_sample(const MlpConfig& cfg);

class MlpModel : public Model {
 public:
  explicit MlpModel(MlpConfig cfg);  // validates
  const MlpConfig& config() const { return cfg_; }

  ModelDescription describe() const override;
  std::vector<std::unique_ptr<Layer>> build_layers(const BatchShape& batch,
                                                   const ParallelContext& ctx) const override;
  // Features [b, input_size] in batch.dtype, "mb{k}.features", an activation the first layer
  // takes over.
  Tensor make_input(Runtime& rt, const BatchShape& batch, int micro_batch,
                    const ParallelContext& ctx = {}) const override;

 private:
  MlpConfig cfg_;
};

}  // namespace tandem
