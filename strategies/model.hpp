// A model, as strategies see it: a stack of layers, each written against the per-rank
// interface. A layer allocates its (possibly sharded) parameters and gradients, runs its
// forward on an input tensor (keeping what its backward needs, per micro-batch), and its
// backward on the output gradient (accumulating its parameter gradients, freeing the saved
// activations). Strategies decide which layers a rank holds, how batches flow and how
// gradients are reduced; layers decide the kernels.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/units.hpp"
#include "strategies/runtime.hpp"

namespace tandem {

enum class Recompute { none, selective, full };
const char* to_string(Recompute recompute);

// How a layer is split inside a tensor-parallel group (Megatron-LM conventions).
struct ParallelContext {
  int tp_size = 1;
  int tp_rank = 0;
  Group tp_group;                  // used only when tp_size > 1
  bool sequence_parallel = false;  // all-reduces become reduce-scatter + all-gather
  Recompute recompute = Recompute::none;
  // With sequence parallelism: the blocks' GEMMs pipelined with their all-gathers and
  // reduce-scatters (GemmArgs::comm_overlap), as Megatron-Core's --tp-comm-overlap.
  bool tp_comm_overlap = false;
  // Context parallelism: the sequence split over cp_size ranks in the zigzag layout
  // (AttentionArgs); attention all-gathers K and V over cp_group (used only when cp_size > 1).
  int cp_size = 1;
  int cp_rank = 0;
  Group cp_group;
  // Expert parallelism: a mixture-of-experts layer's experts split over ep_size ranks, which
  // exchange their tokens by all-to-all over ep_group (used only when ep_size > 1).
  int ep_size = 1;
  int ep_rank = 0;
  Group ep_group;
  // Zero-bubble pipelines: a layer's backward computes the input gradient only and leaves its
  // weight gradients to backward_weights (the schedule's W pass). Layers that cannot split compute
  // everything in backward (their backward_weights does nothing).
  bool split_backward = false;
};

// Shapes of one micro-batch.
// FP8 training as Transformer Engine / Megatron-Core's --fp8-format: every GEMM of the blocks'
// linear layers in FP8, E4M3 everywhere ("e4m3") or E5M2 for gradients ("hybrid").
enum class Fp8Recipe : std::uint8_t { none, e4m3, hybrid };
// How 16-bit weight gradients are accumulated into the main gradients (TrainingConfig).
enum class GradAccumulation : std::uint8_t { fused, add, cast_add };
const char* to_string(GradAccumulation mode);
GradAccumulation parse_grad_accumulation(const std::string& text);  // "fused", "add", "cast_add"; std::invalid_argument
const char* to_string(Fp8Recipe recipe);
Fp8Recipe parse_fp8_recipe(const std::string& text);  // "none", "e4m3", "hybrid"; std::invalid_argument

struct BatchShape {
  std::int64_t micro_batch = 1;  // sequences per micro-batch (b)
  std::int64_t seq_len = 1;      // tokens per sequence (s)
  DType dtype = DType::bf16;     // activation/compute dtype
  DType param_dtype = DType::bf16;
  DType grad_dtype = DType::bf16;  // dtype gradients are accumulated and reduced in
  Fp8Recipe fp8 = Fp8Recipe::none;
  bool autocast = false;  // TrainingConfig::autocast
  GradAccumulation grad_accumulation = GradAccumulation::fused;  // TrainingConfig::grad_accumulation
};

class Layer {
 public:
  virtual ~Layer() = default;
  virtual std::string name() const = 0;

  // Parameters of the whole (unsharded) layer, and of this rank's shard.
  virtual std::int64_t parameter_count() const = 0;
  virtual std::int64_t local_parameter_count() const = 0;

  // Allocates this rank's parameters (and gradient buffers, if `with_gradients`).
  virtual void allocate(Runtime& rt, bool with_gradients) = 0;
  virtual const std::vector<Tensor>& parameters() const = 0;
  virtual const std::vector<Tensor>& gradients() const = 0;

  // forward: input -> output (tokens [b,s] for the embedding; hidden [b,s,h] elsewhere; the
  // loss layer returns a scalar). backward: grad of output -> grad of input (an invalid tensor
  // for the embedding). `micro_batch` keys the saved activations; several can be in flight.
  //
  // Ownership is linear: forward takes ownership of `input` (it keeps it as a saved activation,
  // released by its backward, or releases it before returning) and its output belongs to the
  // caller. Likewise backward takes ownership of `grad_output` (invalid for the loss layer, which
  // seeds the gradient) and its returned input gradient belongs to the caller.
  virtual Tensor forward(Runtime& rt, const Tensor& input, int micro_batch) = 0;
  virtual Tensor backward(Runtime& rt, const Tensor& grad_output, int micro_batch) = 0;
  // With ParallelContext::split_backward: the weight gradients this micro-batch's backward left
  // (a zero-bubble schedule's W pass). Nothing otherwise.
  virtual void backward_weights(Runtime& rt, int micro_batch) {
    (void)rt;
    (void)micro_batch;
  }

  // Where each of parameters() sits in its logical (unsharded) tensor, in the same order.
  virtual const std::vector<TensorPlacement>& placements() const = 0;

  // Gradients of replicated parameters that are partial sums over the tensor-parallel group: those
  // that see only this rank's sequence shard (sequence parallelism: norms, the biases added after
  // a reduce-scatter, position embeddings) and a mixture of experts' router under expert-tensor
  // parallelism (its output gradient holds this rank's slice of the experts' widths). The
  // strategy all-reduces them over the tensor-parallel group once they are final, as Megatron-LM
  // does for its sequence-parallel parameters.
  virtual std::vector<Tensor> tensor_partial_gradients() const { return {}; }

  // Gradients of this rank's experts (mixture-of-experts layers, expert parallelism): ranks
  // holding the same experts sum them, not the whole data-parallel group (Megatron-Core's
  // expert-data-parallel group). A subset of gradients().
  virtual std::vector<Tensor> expert_gradients() const { return {}; }

  // A parameter that another layer on this rank owns (reports in parameters()) and this one
  // computes with, and its gradient, which this layer's backward accumulates into: the tied
  // word-embedding table used by the output layer. A strategy that keeps parameters or
  // gradients only around a layer's use (ZeRO-2/3) must make these live for this layer too.
  virtual std::vector<Tensor> borrowed_parameters() const { return {}; }
  virtual std::vector<Tensor> borrowed_gradients() const { return {}; }

  // The gradient of a parameter this layer shares with a layer on another pipeline stage (a
  // tied word embedding and its copy on the last stage), which the strategy all-reduces between
  // the holders; nullptr when there is none.
  virtual const Tensor* tied_gradient() const { return nullptr; }

  // Analytic figures of one micro-batch on this rank (tested against published formulas).
  virtual Flops forward_flops() const = 0;
  virtual Flops backward_flops() const = 0;
  virtual Bytes saved_activation_bytes() const = 0;
};

// A model instance for one rank: its layers in order (embedding, blocks..., head+loss).
struct ModelDescription {
  std::string name;
  std::int64_t parameter_count = 0;        // whole model
  Flops model_flops_per_token = 0;         // 6N + attention, fwd+bwd, no recompute (for MFU)
};

class Model {
 public:
  virtual ~Model() = default;
  virtual ModelDescription describe() const = 0;
  // Experts of its mixture-of-experts layers (0: none); expert parallelism splits them.
  virtual std::int64_t experts() const { return 0; }
  // Builds the layers of this model for one rank, under a tensor-parallel context.
  virtual std::vector<std::unique_ptr<Layer>> build_layers(const BatchShape& batch,
                                                           const ParallelContext& ctx) const = 0;
  // The input a micro-batch starts from (token ids, or features for an MLP).
  // Under context parallelism (ctx.cp_size > 1) this rank's part of the sequence.
  virtual Tensor make_input(Runtime& rt, const BatchShape& batch, int micro_batch,
                            const ParallelContext& ctx = {}) const = 0;
};

}  // namespace tandem
