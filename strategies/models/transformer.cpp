#include "strategies/models/transformer.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>
#include <utility>

#include "common/checked_math.hpp"
#include "common/input_limits.hpp"
#include "strategies/models/layer_base.hpp"
#include "strategies/ops.hpp"

namespace tandem {

const char* to_string(NormType norm) {
  return norm == NormType::layernorm ? "layernorm" : "rmsnorm";
}
const char* to_string(NormKernel kernel) { return kernel == NormKernel::one_pass ? "one_pass" : "two_pass"; }
const char* to_string(ActivationType activation) {
  return activation == ActivationType::gelu ? "gelu" : "swiglu";
}
const char* to_string(PositionEmbeddingType position) {
  return position == PositionEmbeddingType::learned ? "learned" : "rope";
}

namespace {

using detail::Emitter;
using detail::LayerBase;
using I64 = std::int64_t;

constexpr MemCategory kAct = MemCategory::activations;

I64 ceil_div(I64 a, I64 b) { return (a + b - 1) / b; }
double d(I64 v) { return static_cast<double>(v); }

I64 norm_params(const TransformerConfig& cfg) {
  return checked_mul<I64>(cfg.norm == NormType::layernorm ? 2 : 1, cfg.hidden_size,
                          "transformer '" + cfg.name + "': norm parameters");
}
I64 mlp_mult(const TransformerConfig& cfg) {
  return cfg.activation == ActivationType::swiglu ? 2 : 1;
}
I64 qkv_width(const TransformerConfig& cfg) {
  const I64 d = cfg.head_dim();
  return checked_sum_of_products({{cfg.num_attention_heads, d}, {2, cfg.query_groups(), d}},
                                 "transformer '" + cfg.name + "': qkv width");
}

// Per-rank dimensions of one micro-batch.
struct Dims {
  I64 t = 1, b = 1, s = 1, sl = 1;  // sl: sequence held by this rank (s/t with SP)
  I64 h = 0, d = 0, al = 0, gl = 0, fl = 0, m = 1, vl = 0, nqkv = 0;
  bool sp = false;
  bool overlap = false;  // SP's collectives pipelined with the GEMMs (GemmArgs::comm_overlap)
  int tp_rank = 0;
  Fp8Recipe fp8 = Fp8Recipe::none;
  bool autocast = false;
  GradAccumulation grad_accumulation = GradAccumulation::fused;
  int cp = 1, cp_rank = 0;  // context parallelism: s is this rank's 2 zigzag chunks of the sequence
};

Dims make_dims(const TransformerConfig& cfg, const BatchShape& batch, const ParallelContext& ctx) {
  Dims x;
  x.t = ctx.tp_size;
  x.sp = ctx.sequence_parallel && ctx.tp_size > 1;
  x.overlap = x.sp && ctx.tp_comm_overlap;
  x.b = batch.micro_batch;
  x.cp = std::max(ctx.cp_size, 1);
  x.cp_rank = ctx.cp_rank;
  x.s = batch.seq_len / x.cp;
  x.sl = x.sp ? x.s / x.t : x.s;
  x.h = cfg.hidden_size;
  x.d = cfg.head_dim();
  x.al = cfg.num_attention_heads / x.t;
  x.gl = cfg.query_groups() / x.t;
  x.m = mlp_mult(cfg);
  x.fl = cfg.ffn_size() / x.t;
  x.vl = ceil_div(cfg.vocab_size, x.t);
  x.nqkv = (x.al + 2 * x.gl) * x.d;
  x.tp_rank = ctx.tp_rank;
  x.fp8 = batch.fp8;
  x.autocast = batch.autocast;
  x.grad_accumulation = batch.grad_accumulation;
  return x;
}

// The framework's pass a linear layer's GEMM comes with (GemmArgs::WeightPass): under PyTorch
// AMP (Dims::autocast) a forward (no gradient operand) casts its weight first; a weight gradient
// (it accumulates) reaches the main gradient as the run's grad_accumulation says; a data gradient
// reuses the forward's cast.
GemmArgs::WeightPass weight_pass(const Dims& x, const GemmArgs& g, bool has_gradient_operand) {
  if (!has_gradient_operand) return x.autocast ? GemmArgs::WeightPass::weight_cast : GemmArgs::WeightPass::none;
  if (!g.accumulate) return GemmArgs::WeightPass::none;
  switch (x.grad_accumulation) {
    case GradAccumulation::fused: break;
    case GradAccumulation::add: return GemmArgs::WeightPass::grad_add;
    case GradAccumulation::cast_add: return GemmArgs::WeightPass::grad_cast_add;
  }
  return GemmArgs::WeightPass::none;
}

// The GEMM of a linear layer of the block (qkv, proj, fc1, fc2), in FP8 when the recipe asks, as
// Transformer Engine runs them (the output layer stays in the activation dtype, as Megatron-Core
// keeps it): operands in E4M3, a gradient operand in E5M2 with the hybrid recipe.
GemmArgs linear(const Dims& x, GemmArgs g, bool a_is_gradient, bool b_is_gradient) {
  g.weight_pass = weight_pass(x, g, a_is_gradient || b_is_gradient);
  if (x.fp8 == Fp8Recipe::none) return g;
  const auto format = [&](bool gradient) {
    return gradient && x.fp8 == Fp8Recipe::hybrid ? Fp8Format::e5m2 : Fp8Format::e4m3;
  };
  g.fp8_a = format(a_is_gradient);
  g.fp8_b = format(b_is_gradient);
  return g;
}

// With FP8, Transformer Engine casts a column-parallel block linear's input shard before the
// sequence-parallel all-gather (module/linear.py and layernorm_linear.py, v1.8: the FP8 input is
// what gather_along_first_dim moves), so the gather carries one byte per element, in the forward
// and in the backward's re-gather for the weight gradient. The output layer stays 16-bit.
DType sp_gather_dtype(const Dims& x, DType dt) { return x.fp8 == Fp8Recipe::none ? dt : DType::fp8; }

// Transformer Engine's LayerNormLinear (layernorm_linear.py, v1.8: ln_out is uint8 under FP8) writes
// the norm's output in FP8 when the linear after it runs in FP8, and keeps that one byte per
// element for the weight gradient. A mixture-of-experts router reads the norm in the training
// dtype.
DType norm_out_dtype(const Dims& x, DType dt, bool feeds_block_linear) {
  return feeds_block_linear ? sp_gather_dtype(x, dt) : dt;
}

// A block GEMM's part in Transformer Engine's overlap of sequence parallelism's collectives
// (--tp-comm-overlap), with TE's default userbuffers configuration (transformer_engine/pytorch/
// module/base.py, initialize_ub, get_default_config):
//   consumes_gather  "ring_exchange" (qkv and fc1 forward, proj and fc2 data gradient): one chunk
//                    per tensor-parallel rank, copied by the copy engines (no SMs taken);
//   feeds_scatter    "pipeline" (proj and fc2 forward): 4 chunks, the reduce-scatter on 16 SMs
//                    the GEMM leaves free (set_sm_margin);
//   bulk             (qkv and fc1 data and weight gradients): the input's all-gather beside the
//                    data-gradient GEMM, the reduce-scatter beside the weight-gradient one, on 16 SMs.
using Overlap = GemmArgs::CommOverlap;
constexpr int kPipelineChunks = 4;
constexpr int kOverlapCommSms = 16;
GemmArgs overlapping(const Dims& x, GemmArgs g, Overlap role) {
  if (!x.overlap || role == Overlap::none) return g;
  g.comm_overlap = role;
  g.overlap_chunks = role == Overlap::consumes_gather ? static_cast<int>(x.t)
                     : role == Overlap::feeds_scatter ? kPipelineChunks
                                                      : 1;
  g.overlap_comm_sms = role == Overlap::consumes_gather ? 0 : kOverlapCommSms;
  return g;
}

void check_shardable(const TransformerConfig& cfg, const BatchShape& batch,
                     const ParallelContext& ctx) {
  const I64 t = ctx.tp_size;
  auto fail = [&](const std::string& what) {
    throw std::invalid_argument(cfg.name + ": cannot shard with tp_size " + std::to_string(t) +
                                ": " + what);
  };
  if (t < 1) fail("tp_size must be >= 1");
  if (ctx.tp_rank < 0 || ctx.tp_rank >= t) fail("tp_rank out of range");
  if (cfg.num_attention_heads % t) fail("num_attention_heads not divisible by tp_size");
  if (cfg.query_groups() % t) fail("num_query_groups not divisible by tp_size");
  if (cfg.ffn_size() % t) fail("ffn_hidden_size not divisible by tp_size");
  if (cfg.moe() && cfg.expert_ffn_size() % t) fail("moe_ffn_hidden_size not divisible by tp_size (expert-tensor parallelism)");
  if (cfg.moe() && cfg.moe_shared_expert_intermediate_size % t)
    fail("moe_shared_expert_intermediate_size not divisible by tp_size (expert-tensor parallelism)");
  if (batch.micro_batch < 1 || batch.seq_len < 1)
    throw std::invalid_argument(cfg.name + ": micro_batch and seq_len must be >= 1");
  const I64 cp = std::max(ctx.cp_size, 1);
  if (ctx.cp_rank < 0 || ctx.cp_rank >= cp) fail("cp_rank out of range");
  if (cp > 1 && batch.seq_len % (2 * cp))
    throw std::invalid_argument(cfg.name + ": seq_len " + std::to_string(batch.seq_len) +
                                " does not split into 2 x " + std::to_string(cp) +
                                " chunks (context parallelism's load-balanced layout)");
  if (cp > 1 && cfg.position == PositionEmbeddingType::learned)
    throw std::invalid_argument(cfg.name + ": context parallelism needs rotary positions (model position: rope); "
                                "learned position tables are not split by sequence yet");
  if (ctx.sequence_parallel && t > 1 && (batch.seq_len / cp) % t)
    fail("seq_len " + std::to_string(batch.seq_len) + (cp > 1 ? " / context_parallel_size" : "") +
         " not divisible by tp_size (sequence parallel)");
  if (cfg.position == PositionEmbeddingType::learned &&
      batch.seq_len > cfg.max_positions())
    throw std::invalid_argument(cfg.name + ": seq_len " + std::to_string(batch.seq_len) +
                                " exceeds max_position_embeddings " +
                                std::to_string(cfg.max_positions()));
}

// A data tensor of token ids [b, s] (tokens, labels; exec/cpu/data.hpp's contract). Under
// context parallelism it holds this rank's two zigzag chunks of the sequence [b, s/cp], placed
// in the whole [b, s] so that a backend fills it from those positions.
Tensor sequence_data(Runtime& rt, const std::string& name, const BatchShape& batch, const ParallelContext& ctx) {
  const I64 cp = std::max(ctx.cp_size, 1), local = batch.seq_len / cp;
  Tensor t = rt.alloc(name, {batch.micro_batch, local}, DType::int32, kAct);
  if (cp == 1) return t;
  TensorPlacement where;
  where.name = name;
  where.global_shape = {batch.micro_batch, batch.seq_len};
  where.dim = 1;
  const I64 c = local / 2;
  where.segments = {{ctx.cp_rank * c, c}, {(2 * cp - 1 - ctx.cp_rank) * c, c}};
  rt.place(t, where);
  return t;
}

// ---------------------------------------------------------------- op helpers

struct Param {
  Tensor w, g;  // parameter and its gradient (g invalid without gradients)
};

Handle gemm_op(Emitter& em, Phase ph, std::string_view what, std::string_view sf, const Tensor& a,
               const Tensor& b, const Tensor& c, const GemmArgs& args) {
  return em.computed(ops::gemm(em.rt(), ph, em.label(what, sf), a, b, c, args, em.compute_issue()));
}
Handle elementwise_op(Emitter& em, Phase ph, std::string_view what, std::string_view sf,
                      std::vector<Tensor> in, std::vector<Tensor> out, ElementwiseFn fn, I64 numel,
                      bool backward = false) {
  return em.computed(ops::elementwise(em.rt(), ph, em.label(what, sf), std::move(in),
                                      std::move(out), ElementwiseArgs{fn, numel, backward},
                                      em.compute_issue()));
}
NormKind norm_kind(const TransformerConfig& cfg) {
  return cfg.norm == NormType::layernorm ? NormKind::layer_norm : NormKind::rms_norm;
}
void norm_fwd(Emitter& em, const TransformerConfig& cfg, Phase ph, std::string_view what,
              std::string_view sf, const Tensor& x, const Param& w, const Param& b, const Tensor& y,
              I64 rows, I64 cols) {
  std::vector<Tensor> in{x, w.w};
  if (b.w.valid()) in.push_back(b.w);
  em.computed(ops::norm(em.rt(), ph, em.label(what, sf), std::move(in), {y},
                        NormArgs{norm_kind(cfg), rows, cols, false}, em.compute_issue()));
}
void norm_bwd(Emitter& em, const TransformerConfig& cfg, std::string_view what, const Tensor& x,
              const Tensor& dy, const Param& w, const Param& b, const Tensor& dx, I64 rows,
              I64 cols) {
  std::vector<Tensor> out{dx};
  if (w.g.valid()) out.push_back(w.g);
  if (b.g.valid()) out.push_back(b.g);
  em.computed(ops::norm(em.rt(), Phase::backward, em.label(what, "bwd"), {x, dy, w.w},
                        std::move(out), NormArgs{norm_kind(cfg), rows, cols, true, cfg.norm_kernel == NormKernel::two_pass},
                        em.compute_issue()));
}
// Bias gradient: a column sum of the output gradient, accumulated into the bias gradient.
void bias_grad(Emitter& em, std::string_view what, const Tensor& dy, const Param& bias, I64 numel) {
  if (!bias.w.valid()) return;
  elementwise_op(em, Phase::backward, what, "bwd_w", {dy}, {bias.g}, ElementwiseFn::bias_add,
                 numel, true);
}
void bias_fwd(Emitter& em, Phase ph, std::string_view what, std::string_view sf, const Tensor& y,
              const Param& bias, I64 numel) {
  if (!bias.w.valid()) return;
  elementwise_op(em, ph, what, sf, {y, bias.w}, {y}, ElementwiseFn::bias_add, numel);
}
// A tensor-parallel collective on Stream::tp_comm after the last compute op; unless `defer`,
// the next compute op waits for it.
Handle tp_comm(Emitter& em, const ParallelContext& ctx, OpKind kind, Phase ph, std::string_view what,
               std::string_view sf, const Tensor& buffer, bool defer = false,
               ReduceOp reduce = ReduceOp::sum) {
  const std::string label = em.label(what, sf);
  const Issue issue = em.comm_issue(Stream::tp_comm);
  Handle h;
  switch (kind) {
    case OpKind::all_reduce:
      h = ops::all_reduce(em.rt(), ph, label, buffer, ctx.tp_group, issue, reduce);
      break;
    default:
      throw std::logic_error("tp_comm: not an all-reduce");
  }
  if (!defer) em.pending(h);
  return h;
}

// Who moves a sequence-parallel collective: NCCL, or, for a block's linears under
// --tp-comm-overlap, Transformer Engine's userbuffers (Issue::userbuffers). The embedding's,
// the output layer's and the experts' collectives stay NCCL's.
enum class SpMover { nccl, block_linear };

// Sequence parallelism's collectives between a full activation [b, s, k] and this rank's
// sequence shard [b, s/t, k] (CommShards along dimension 1): the reduce-scatter writes the
// reduced shard into `shard`, the all-gather fills `full` from every rank's `shard`.
Handle sp_comm(Emitter& em, const ParallelContext& ctx, const Dims& x, SpMover mover, OpKind kind, Phase ph,
               std::string_view what, std::string_view sf, const Tensor& full, const Tensor& shard, bool defer = false) {
  const std::string label = em.label(what, sf);
  Issue issue = em.comm_issue(Stream::tp_comm);
  issue.userbuffers = mover == SpMover::block_linear && x.overlap;  // as overlapping() chunks the GEMMs
  const CommShards part{{shard}, /*dim=*/1, false};
  const Handle h = kind == OpKind::reduce_scatter
                       ? ops::reduce_scatter(em.rt(), ph, label, {full}, ctx.tp_group, part, issue)
                       : ops::all_gather(em.rt(), ph, label, {full}, ctx.tp_group, part, issue);
  if (!defer) em.pending(h);
  return h;
}

// After a row-parallel GEMM: all-reduce the partial sums in place, or reduce-scatter them to this
// rank's sequence shard (sequence parallel). Takes `partial`, returns the reduced tensor.
Tensor reduce_partial(Emitter& em, const ParallelContext& ctx, const Dims& x, SpMover mover, DType dt, Phase ph,
                      std::string_view what, std::string_view sf, const Tensor& partial) {
  if (x.t == 1) return partial;
  if (!x.sp) {
    tp_comm(em, ctx, OpKind::all_reduce, ph, std::string(what) + ".allreduce", sf, partial);
    return partial;
  }
  Tensor shard = em.rt().alloc(em.name(std::string(what) + ".out"), {x.b, x.sl, x.h}, dt, kAct);
  const Handle h = sp_comm(em, ctx, x, mover, OpKind::reduce_scatter, ph,
                           std::string(what) + ".reducescatter", sf, partial, shard);
  em.release_after(partial, h);  // the reduce-scatter reads it on the tp stream
  return shard;
}

// Before a column-parallel GEMM with sequence parallelism: all-gather the sequence shards.
// Returns `local` itself without SP.
Tensor gather_full(Emitter& em, const ParallelContext& ctx, const Dims& x, SpMover mover, DType dt, Phase ph,
                   std::string_view what, std::string_view sf, const Tensor& local,
                   bool defer = false, Handle* handle = nullptr) {
  if (!x.sp) return local;
  Tensor full = em.rt().alloc(em.name(std::string(what) + ".gathered"), {x.b, x.s, x.h}, dt, kAct);
  Handle h = sp_comm(em, ctx, x, mover, OpKind::all_gather, ph, std::string(what) + ".allgather", sf, full,
                     local, defer);
  if (handle) *handle = h;
  return full;
}

// Zero-bubble pipelines (ParallelContext::split_backward) split a block's backward into B, the
// input gradients the previous stage waits for, and W, the weight-gradient GEMMs, run later by
// Layer::backward_weights to fill the pipeline's bubbles. A weight-gradient GEMM goes through
// run() with the tensors only it still reads: without the split it runs now (and B releases them
// as usual); with it, it is queued, B's releases of those tensors (release()) skip them, and the
// W pass releases them after the GEMM.
class WeightPass {
 public:
  using Work = std::function<void(Emitter&)>;
  WeightPass(Runtime& rt, std::vector<Work>* later) : rt_(rt), later_(later) {}

  void run(Emitter& em, std::vector<Tensor> owned, Work work) {
    if (later_ == nullptr) return work(em);
    for (const Tensor& t : owned) kept_.insert(t.id);
    later_->push_back([work = std::move(work), owned = std::move(owned)](Emitter& e) {
      work(e);
      std::set<int> released;
      for (const Tensor& t : owned)
        if (released.insert(t.id).second) e.release(t);
    });
  }
  void release(const Tensor& t) const {
    if (t.valid() && !kept_.count(t.id)) rt_.release(t);
  }

 private:
  Runtime& rt_;
  std::vector<Work>* later_;  // null: no split
  std::set<int> kept_;
};

// Backward of a column-parallel linear Y[b·s, n] = X[b·s, k]·W whose input X this rank saved
// (the sequence shard with SP). Issues, as Megatron-LM does: [SP: all-gather of X, deferred],
// dX GEMM, the all-reduce (or reduce-scatter) of dX, the weight-gradient GEMM overlapping it.
// `w_out_in`: W is stored [n, k] (output layer) instead of [k, n].
// Takes `saved_in` and `d_out`; returns dX (local shard with SP) for the caller.
Tensor column_parallel_bwd(Emitter& em, const ParallelContext& ctx, const Dims& x, DType dt,
                           std::string_view what, const Tensor& saved_in, const Tensor& d_out,
                           const Param& w, I64 k, I64 n, bool w_out_in = false, bool block_linear = true,
                           WeightPass* weights = nullptr) {
  // The block's linears (not the output layer) overlap both collectives in bulk with TE.
  const Overlap bulk = block_linear ? Overlap::bulk : Overlap::none;
  Runtime& rt = em.rt();
  // With sequence parallelism the weight gradient reads the whole sequence's input, gathered
  // beside the dgrad GEMM; a deferred weight gradient keeps the gathered input until its W pass
  // (as the zero-bubble Megatron fork's WeightGradStore keeps total_input).
  Handle gathered;
  const SpMover mover = block_linear ? SpMover::block_linear : SpMover::nccl;
  const Tensor in_full = gather_full(em, ctx, x, mover, block_linear ? sp_gather_dtype(x, dt) : dt, Phase::backward,
                                     std::string(what) + ".input", "bwd", saved_in, /*defer=*/true, &gathered);
  const I64 tokens = x.b * x.s;
  Tensor d_in_full = rt.alloc(em.name(std::string(what) + ".dinput"), {x.b, x.s, k}, dt, kAct);
  GemmArgs dgrad{tokens, k, n};
  if (w_out_in) dgrad.trans_b = false;
  else dgrad.trans_b = true;
  gemm_op(em, Phase::backward, what, "bwd", d_out, w.w, d_in_full, linear(x, overlapping(x, dgrad, bulk), true, false));
  Tensor d_in = d_in_full;
  Handle comm;
  if (x.t > 1) {
    if (x.sp) {
      d_in = rt.alloc(em.name(std::string(what) + ".dinput_shard"), {x.b, x.sl, k}, dt, kAct);
      comm = sp_comm(em, ctx, x, mover, OpKind::reduce_scatter, Phase::backward,
                     std::string(what) + ".reducescatter", "bwd", d_in_full, d_in, true);
    } else {
      comm = tp_comm(em, ctx, OpKind::all_reduce, Phase::backward,
                     std::string(what) + ".allreduce", "bwd", d_in_full, true);
    }
  }
  auto weight_gradient = [=, what = std::string(what)](Emitter& e) {
    e.pending(gathered);
    if (!w.g.valid()) return;
    GemmArgs wgrad = overlapping(x, w_out_in ? GemmArgs{n, k, tokens} : GemmArgs{k, n, tokens}, bulk);
    wgrad.trans_a = true;
    wgrad.accumulate = true;
    if (w_out_in) gemm_op(e, Phase::backward, what, "bwd_w", d_out, in_full, w.g, linear(x, wgrad, true, false));
    else gemm_op(e, Phase::backward, what, "bwd_w", in_full, d_out, w.g, linear(x, wgrad, false, true));
  };
  // Without a split backward (or a caller's pass) the weight gradient runs now.
  WeightPass now(em.rt(), nullptr);
  WeightPass& pass = weights ? *weights : now;
  pass.run(em, {d_out, in_full, saved_in}, weight_gradient);
  em.pending(comm);
  // B's releases, but not of what a deferred weight gradient still reads.
  pass.release(d_out);
  if (in_full.id != saved_in.id) pass.release(in_full);
  pass.release(saved_in);
  if (d_in.id != d_in_full.id) em.release_after(d_in_full, comm);
  return d_in;
}

// Shared word-embedding table (tied embeddings): the first of the two layers allocated on a
// runtime allocates it and owns it; the other reuses it (and borrows it: Layer::borrowed_*).
struct SharedTable {
  Runtime* rt = nullptr;
  Tensor weight, grad;

  // Binds `p` to the table on `runtime`: calls `allocate` (which fills p) and returns true when
  // the caller is the first there, else sets p to the existing table and returns false.
  template <class Allocate>
  bool bind(Runtime& runtime, Param& p, Allocate allocate) {
    if (rt == &runtime && weight.valid()) {
      p = {weight, grad};
      return false;
    }
    allocate();
    rt = &runtime;
    weight = p.w;
    grad = p.g;
    return true;
  }
};

// A table tensor a layer uses without owning it (Layer::borrowed_parameters).
std::vector<Tensor> unless_owned(bool owns, const Tensor& t) {
  if (owns || !t.valid()) return {};
  return {t};
}

// Ranges of a column-parallel dimension made of parts of the given global widths (Q | K | V,
// gate | up), each split evenly over the tensor-parallel group: rank r holds the r-th slice
// of every part, concatenated.
std::vector<std::pair<I64, I64>> split_parts(std::initializer_list<I64> widths, const Dims& x) {
  std::vector<std::pair<I64, I64>> segments;
  I64 base = 0;
  for (I64 w : widths) {
    segments.push_back({base + x.tp_rank * (w / x.t), w / x.t});
    base += w;
  }
  return segments;
}

// The columns of an MLP's first weight of width `width` (gate | up with a gated activation).
std::vector<std::pair<I64, I64>> fc1_parts(I64 width, const Dims& x) {
  return x.m == 2 ? split_parts({width, width}, x) : split_parts({width}, x);
}

TensorPlacement sharded(std::string name, std::vector<I64> global_shape, int dim,
                        std::vector<std::pair<I64, I64>> segments) {
  TensorPlacement p = whole_tensor(std::move(name), std::move(global_shape));
  p.dim = dim;
  p.segments = std::move(segments);
  return p;
}

// The vocab-parallel table [ceil(V/t), h] of rank r: rows [r·ceil(V/t), ...) of [V, h]. `name`
// is the logical table (the tied copy on the last pipeline stage is the embedding's table).
TensorPlacement vocab_rows(const TransformerConfig& cfg, const Dims& x, std::string name) {
  return sharded(std::move(name), {cfg.vocab_size, x.h}, 0, {{x.tp_rank * x.vl, x.vl}});
}

// A layer holding a vocab-parallel table [ceil(V/t), h]: the embedding (the word table) and
// the LM head (the untied output layer, or the tied table's copy on the last pipeline stage).
// With tied embeddings the two share one table per runtime (SharedTable); the one that did not
// allocate it borrows it.
class VocabTableLayer : public LayerBase {
 public:
  VocabTableLayer(std::string name, TransformerConfig cfg, BatchShape batch, ParallelContext ctx,
                  std::shared_ptr<SharedTable> table)
      : LayerBase(std::move(name), batch, std::move(ctx)), cfg_(std::move(cfg)),
        x_(make_dims(cfg_, batch_, ctx_)), table_(std::move(table)) {}

  // A tied table held here has a copy on the other end of the pipeline (first stage: the
  // embedding's original; last stage: the LM head's copy).
  const Tensor* tied_gradient() const override {
    const Param& t = vocab_table();
    return cfg_.tied_embeddings && owns_table_ && t.g.valid() ? &t.g : nullptr;
  }
  std::vector<Tensor> borrowed_parameters() const override {
    return unless_owned(owns_table_, vocab_table().w);
  }
  std::vector<Tensor> borrowed_gradients() const override {
    return unless_owned(owns_table_, vocab_table().g);
  }

 protected:
  virtual const Param& vocab_table() const = 0;
  // Allocates the table into `p` as this layer's parameter `what`, the logical tensor `logical`
  // (vocab_rows), unless the other table layer allocated it on `rt` already: then p borrows it.
  void bind_vocab_table(Runtime& rt, Param& p, const std::string& what, bool with_gradients,
                        std::string logical) {
    owns_table_ = table_->bind(rt, p, [&] {
      p.w = add_parameter(rt, what, {x_.vl, x_.h}, with_gradients, &p.g,
                          vocab_rows(cfg_, x_, std::move(logical)));
    });
  }

  TransformerConfig cfg_;
  Dims x_;
  std::shared_ptr<SharedTable> table_;
  bool owns_table_ = false;  // allocated the word-embedding table (or its copy) itself
};

// ---------------------------------------------------------------- embedding

class EmbeddingLayer final : public VocabTableLayer {
 public:
  EmbeddingLayer(TransformerConfig cfg, BatchShape batch, ParallelContext ctx,
                 std::shared_ptr<SharedTable> table)
      : VocabTableLayer("embedding", std::move(cfg), batch, std::move(ctx), std::move(table)) {}

  std::int64_t parameter_count() const override { return embedding_parameter_count(cfg_); }
  std::int64_t local_parameter_count() const override {
    return x_.vl * x_.h + (learned() ? cfg_.max_positions() * x_.h : 0);
  }
  // With SP each rank adds the positions of its sequence shard only.
  std::vector<Tensor> tensor_partial_gradients() const override {
    if (!x_.sp || !pos_.g.valid()) return {};
    return {pos_.g};
  }

  void allocate(Runtime& rt, bool with_gradients) override {
    clear_parameters();
    bind_vocab_table(rt, word_, "word.weight", with_gradients, "embedding.word.weight");
    if (learned())
      pos_.w = add_parameter(rt, "position.weight", {cfg_.max_positions(), x_.h},
                             with_gradients, &pos_.g);
  }

  Tensor forward(Runtime& rt, const Tensor& tokens, int mb) override {
    Emitter em = emitter(rt, mb);
    const DType dt = batch_.dtype;
    const Phase ph = Phase::forward;
    Tensor emb = rt.alloc(em.name("word.out"), {x_.b, x_.s, x_.h}, dt, kAct);
    em.computed(ops::embedding(rt, ph, em.label("word", "fwd"), {word_.w, tokens}, {emb},
                               EmbeddingArgs{x_.b * x_.s, x_.vl, x_.h, x_.tp_rank * x_.vl, false},
                               em.compute_issue()));
    const I64 numel = x_.b * x_.sl * x_.h;
    Tensor pos;
    if (learned()) {  // independent of the word embedding's reduction: issued before it
      pos = rt.alloc(em.name("position.out"), {x_.b, x_.sl, x_.h}, dt, kAct);
      em.computed(ops::embedding(rt, ph, em.label("position", "fwd"), {pos_.w}, {pos},
                                 EmbeddingArgs{x_.b * x_.sl, cfg_.max_positions(), x_.h,
                                               position_offset(), false},
                                 em.compute_issue()));
    }
    Tensor out = reduce_partial(em, ctx_, x_, SpMover::nccl, dt, ph, "word", "fwd", emb);
    if (learned()) {
      elementwise_op(em, ph, "add_position", "fwd", {out, pos}, {out}, ElementwiseFn::add, numel);
      rt.release(pos);
    }
    save(mb, "tokens", tokens);
    if (cfg_.hidden_dropout <= 0) {
      em.flush();
      return out;
    }
    Tensor y = rt.alloc(em.name("dropout.out"), {x_.b, x_.sl, x_.h}, dt, kAct);
    Tensor mask = detail::alloc_byte_mask(rt, em.name("dropout.mask"), numel);
    elementwise_op(em, ph, "dropout", "fwd", {out}, {y, mask}, ElementwiseFn::dropout, numel);
    rt.release(out);
    save(mb, "mask", mask);
    em.flush();
    return y;
  }

  Tensor backward(Runtime& rt, const Tensor& dy, int mb) override {
    Emitter em = emitter(rt, mb);
    const DType dt = batch_.dtype;
    const I64 numel = x_.b * x_.sl * x_.h;
    Tensor d = dy;
    if (cfg_.hidden_dropout > 0) {
      Tensor mask = take(mb, "mask");
      d = rt.alloc(em.name("dropout.dinput"), {x_.b, x_.sl, x_.h}, dt, kAct);
      elementwise_op(em, Phase::backward, "dropout", "bwd", {dy, mask}, {d},
                     ElementwiseFn::dropout, numel, true);
      rt.release(mask);
      rt.release(dy);
    }
    if (learned() && pos_.g.valid())
      em.computed(ops::embedding(rt, Phase::backward, em.label("position", "bwd_w"), {d},
                                 {pos_.g},
                                 EmbeddingArgs{x_.b * x_.sl, cfg_.max_positions(), x_.h,
                                               position_offset(), true},
                                 em.compute_issue()));
    // The word embedding's reduction (all-reduce or reduce-scatter) is an identity or an
    // all-gather backward.
    Handle gathered;
    Tensor full = gather_full(em, ctx_, x_, SpMover::nccl, dt, Phase::backward, "word", "bwd", d, false,
                              &gathered);
    if (full.id != d.id) em.release_after(d, gathered);
    Tensor tokens = take(mb, "tokens");
    if (word_.g.valid())
      em.computed(ops::embedding(rt, Phase::backward, em.label("word", "bwd_w"), {full, tokens},
                                 {word_.g},
                                 EmbeddingArgs{x_.b * x_.s, x_.vl, x_.h, x_.tp_rank * x_.vl, true},
                                 em.compute_issue()));
    rt.release(full);
    rt.release(tokens);
    finish_micro_batch(mb);
    em.flush();
    return Tensor{};
  }

 protected:
  std::unique_ptr<LayerBase> fresh_copy() const override {
    return std::make_unique<EmbeddingLayer>(cfg_, batch_, ctx_, std::make_shared<SharedTable>());
  }
  Tensor make_measure_input(Runtime& rt) const override {
    return rt.alloc("tokens", {x_.b, x_.s}, DType::int32, kAct);
  }

 private:
  bool learned() const { return cfg_.position == PositionEmbeddingType::learned; }
  // A position lookup has no ids: row vocab_offset + (t mod rows' seq). With sequence
  // parallelism this rank holds positions [tp_rank·s/t, (tp_rank+1)·s/t).
  I64 position_offset() const { return x_.sp ? x_.tp_rank * x_.sl : 0; }
  const Param& vocab_table() const override { return word_; }
  Param word_, pos_;
};

// ---------------------------------------------------------------- transformer block

class TransformerBlock final : public LayerBase {
 public:
  TransformerBlock(TransformerConfig cfg, int index, BatchShape batch, ParallelContext ctx)
      : LayerBase("layer" + std::to_string(index), batch, std::move(ctx)), cfg_(std::move(cfg)),
        index_(index), x_(make_dims(cfg_, batch_, ctx_)), moe_(cfg_.moe_layer(index)) {
    if (moe_) {
      ep_ = std::max(ctx_.ep_size, 1);
      local_experts_ = cfg_.num_moe_experts / ep_;
    }
  }

  // Rows each expert's buffer holds for this rank's tokens on `rt`: the capacity, or dropless what
  // the backend materialises (every token when it executes, the expected load when it prices).
  I64 capacity_on(const Runtime& rt) const {
    const I64 tokens = x_.b * x_.s, priced = cfg_.priced_expert_rows(tokens);
    return cfg_.moe_expert_capacity_factor > 0 ? priced : rt.dropless_expert_rows(tokens, priced);
  }

  std::int64_t parameter_count() const override { return block_parameter_count(cfg_, index_); }
  std::int64_t local_parameter_count() const override {
    const I64 n = norm_params(cfg_);
    I64 p = 2 * n;
    p += x_.h * x_.nqkv + (cfg_.bias ? x_.nqkv : 0);
    p += x_.al * x_.d * x_.h + (cfg_.bias ? x_.h : 0);
    if (moe_)  // the router whole; each expert's (and the shared expert's) width split over tp
      return p + x_.h * cfg_.num_moe_experts +
             (local_experts_ * cfg_.expert_ffn_size() + cfg_.moe_shared_expert_intermediate_size) / x_.t * x_.h *
                 (x_.m + 1);
    p += x_.h * x_.fl * x_.m + (cfg_.bias ? x_.fl * x_.m : 0);
    p += x_.fl * x_.h + (cfg_.bias ? x_.h : 0);
    return p;
  }

  std::vector<Tensor> expert_gradients() const override {
    if (!moe_ || !fc1_w_.g.valid()) return {};
    return {fc1_w_.g, fc2_w_.g};
  }

  void allocate(Runtime& rt, bool g) override {
    clear_parameters();
    const bool ln = cfg_.norm == NormType::layernorm;
    // Replicated parameters are whole; a sharded one is `dim` of the global shape split into
    // the parts `segments` (split_parts).
    auto param = [&](const char* what, std::vector<I64> shape, Param& p, std::vector<I64> global = {},
                     int dim = 0, std::vector<std::pair<I64, I64>> segments = {}, int dim2 = -1,
                     std::vector<std::pair<I64, I64>> segments2 = {}) {
      TensorPlacement where;
      if (!global.empty()) where = sharded(name() + "." + what, std::move(global), dim, std::move(segments));
      if (dim2 >= 0 && x_.t > 1) where.dim2 = dim2, where.segments2 = std::move(segments2);
      p.w = add_parameter(rt, what, std::move(shape), g, &p.g, std::move(where));
    };
    const I64 a = cfg_.num_attention_heads * x_.d, kv = cfg_.query_groups() * x_.d, f = cfg_.ffn_size();
    const auto qkv_cols = split_parts({a, kv, kv}, x_);
    const auto fc1_cols = fc1_parts(f, x_);
    param("attn.norm.weight", {x_.h}, ln1_w_);
    if (ln) param("attn.norm.bias", {x_.h}, ln1_b_);
    param("attn.qkv.weight", {x_.h, x_.nqkv}, qkv_w_, {x_.h, a + 2 * kv}, 1, qkv_cols);
    if (cfg_.bias) param("attn.qkv.bias", {x_.nqkv}, qkv_b_, {a + 2 * kv}, 0, qkv_cols);
    param("attn.proj.weight", {x_.al * x_.d, x_.h}, proj_w_, {a, x_.h}, 0, split_parts({a}, x_));
    if (cfg_.bias) param("attn.proj.bias", {x_.h}, proj_b_);
    param("mlp.norm.weight", {x_.h}, ln2_w_);
    if (ln) param("mlp.norm.bias", {x_.h}, ln2_b_);
    if (moe_) {
      // The router is replicated; this rank's experts are its rows of every expert tensor (rank r
      // of the expert-parallel group: experts [r·E/ep, (r+1)·E/ep)), and with tensor parallelism
      // its slice of each expert's width (expert-tensor parallelism, as a dense MLP's: fc1's
      // columns of every part, fc2's rows), the shared expert's too.
      const I64 E = cfg_.num_moe_experts, El = local_experts_, fe = cfg_.expert_ffn_size(), fel = fe / x_.t;
      const std::vector<std::pair<I64, I64>> mine{{ctx_.ep_rank * El, El}};
      param("mlp.router.weight", {x_.h, E}, router_w_);
      param("mlp.experts.fc1.weight", {El, x_.h, fel * x_.m}, fc1_w_, {E, x_.h, fe * x_.m}, 0, mine, 2, fc1_parts(fe, x_));
      param("mlp.experts.fc2.weight", {El, fel, x_.h}, fc2_w_, {E, fe, x_.h}, 0, mine, 1, split_parts({fe}, x_));
      if (const I64 shared = cfg_.moe_shared_expert_intermediate_size; shared > 0) {
        const I64 sl = shared / x_.t;
        param("mlp.shared.fc1.weight", {x_.h, sl * x_.m}, shared_fc1_w_, {x_.h, shared * x_.m}, 1, fc1_parts(shared, x_));
        param("mlp.shared.fc2.weight", {sl, x_.h}, shared_fc2_w_, {shared, x_.h}, 0, split_parts({shared}, x_));
      }
      return;
    }
    param("mlp.fc1.weight", {x_.h, x_.fl * x_.m}, fc1_w_, {x_.h, f * x_.m}, 1, fc1_cols);
    if (cfg_.bias) param("mlp.fc1.bias", {x_.fl * x_.m}, fc1_b_, {f * x_.m}, 0, fc1_cols);
    param("mlp.fc2.weight", {x_.fl, x_.h}, fc2_w_, {f, x_.h}, 0, split_parts({f}, x_));
    if (cfg_.bias) param("mlp.fc2.bias", {x_.h}, fc2_b_);
  }

  // With SP the norms and the biases added after a reduce-scatter see this rank's sequence
  // shard only.
  // Under expert-tensor parallelism the router's too (moe_backward: its output gradient is this
  // rank's part of the sum over the experts' width slices).
  std::vector<Tensor> tensor_partial_gradients() const override {
    std::vector<Tensor> out;
    if (x_.sp)
      for (const Param* p : {&ln1_w_, &ln1_b_, &proj_b_, &ln2_w_, &ln2_b_, &fc2_b_})
        if (p->g.valid()) out.push_back(p->g);
    if (moe_ && x_.t > 1 && router_w_.g.valid()) out.push_back(router_w_.g);
    return out;
  }

  Tensor forward(Runtime& rt, const Tensor& input, int mb) override {
    return forward_impl(rt, input, mb, /*recompute_pass=*/false);
  }

  Tensor backward(Runtime& rt, const Tensor& dy, int mb) override {
    if (ctx_.recompute == Recompute::full) {
      Tensor x = take(mb, "x");
      rt.release(forward_impl(rt, x, mb, /*recompute_pass=*/true));
    }
    Emitter em = emitter(rt, mb);
    const DType dt = batch_.dtype;
    const I64 tokens = x_.b * x_.s;
    const I64 local_numel = x_.b * x_.sl * x_.h;
    auto alloc = [&](const std::string& what, std::vector<I64> shape) {
      return rt.alloc(em.name(what), std::move(shape), dt, kAct);
    };
    WeightPass weights(rt, ctx_.split_backward ? &deferred_[mb] : nullptr);
    auto release_unless = [&](const Tensor& t, const Tensor& keep) {
      if (t.id != keep.id) weights.release(t);
    };

    // ---- MLP ----
    Tensor d_mlp = dropout_bwd(em, mb, "mlp", dy);
    Tensor d_ln2 = moe_ ? moe_backward(em, mb, d_mlp, dy, weights) : mlp_backward(em, mb, d_mlp, dy, weights);
    Tensor x2 = take(mb, "x2");
    Tensor d_x2 = alloc("mlp.norm.dinput", {x_.b, x_.sl, x_.h});
    norm_bwd(em, cfg_, "mlp.norm", x2, d_ln2, ln2_w_, ln2_b_, d_x2, x_.b * x_.sl, x_.h);
    rt.release(x2);
    rt.release(d_ln2);
    elementwise_op(em, Phase::backward, "mlp.residual", "bwd", {d_x2, dy}, {d_x2},
                   ElementwiseFn::add, local_numel);
    weights.release(dy);

    // ---- attention ----
    Handle gathered;
    Tensor d_attn = dropout_bwd(em, mb, "attn", d_x2);
    bias_grad(em, "attn.proj.bias", d_attn, proj_b_, local_numel);
    Tensor d_proj = gather_full(em, ctx_, x_, SpMover::block_linear, dt, Phase::backward, "attn.proj", "bwd", d_attn,
                                false, &gathered);
    if (d_proj.id != d_attn.id && d_attn.id != d_x2.id) em.release_after(d_attn, gathered);
    Tensor ctx_out = take(mb, "ctx");
    Tensor d_ctx = alloc("attn.core.doutput", {x_.b, x_.s, x_.al * x_.d});
    GemmArgs proj_dgrad{tokens, x_.al * x_.d, x_.h};
    proj_dgrad.trans_b = true;
    gemm_op(em, Phase::backward, "attn.proj", "bwd", d_proj, proj_w_.w, d_ctx,
            linear(x_, overlapping(x_, proj_dgrad, Overlap::consumes_gather), true, false));
    weights.run(em, {ctx_out, d_proj}, [this, ctx_out, d_proj, tokens](Emitter& e) {
      if (!proj_w_.g.valid()) return;
      GemmArgs wgrad{x_.al * x_.d, x_.h, tokens};
      wgrad.trans_a = true;
      wgrad.accumulate = true;
      gemm_op(e, Phase::backward, "attn.proj", "bwd_w", ctx_out, d_proj, proj_w_.g, linear(x_, wgrad, false, true));
    });
    release_unless(d_proj, d_x2);

    Tensor qkv = take(mb, "qkv");
    std::vector<Tensor> core;
    Tensor o = ctx_out;
    if (ctx_.recompute == Recompute::selective) {
      auto [rc_out, rc_core] = core_forward(em, Phase::backward, "recompute", qkv);
      o = rc_out;
      core = std::move(rc_core);
    } else {
      for (std::size_t i = 0; i < core_count(); ++i) core.push_back(take(mb, core_key(i)));
    }
    Tensor d_qkv = alloc("attn.qkv.doutput", {x_.b, x_.s, x_.nqkv});
    const Tensor kv = x_.cp > 1 ? gather_kv(em, Phase::backward, "bwd", qkv) : Tensor{};
    std::vector<Tensor> in{qkv};
    if (kv.valid()) in.push_back(kv);
    in.push_back(o);
    in.insert(in.end(), core.begin(), core.end());
    in.push_back(d_ctx);
    std::vector<Tensor> d_out{d_qkv};
    if (kv.valid()) d_out.push_back(alloc("attn.cp.dkv_gathered", kv.shape));
    AttentionArgs bargs = attention_args();
    bargs.backward = true;
    em.computed(ops::attention(rt, Phase::backward, em.label("attn.core", "bwd"), std::move(in),
                               d_out, bargs, em.compute_issue()));
    if (kv.valid()) {
      rt.release(kv);
      scatter_kv_grad(em, d_out[1], d_qkv);
    }
    for (const auto& t : core) rt.release(t);
    if (o.id != ctx_out.id) rt.release(o);
    weights.release(ctx_out);
    rt.release(qkv);
    rt.release(d_ctx);
    bias_grad(em, "attn.qkv.bias", d_qkv, qkv_b_, tokens * x_.nqkv);
    Tensor d_ln1 = column_parallel_bwd(em, ctx_, x_, dt, "attn.qkv", take(mb, "ln1"), d_qkv,
                                       qkv_w_, x_.h, x_.nqkv, false, true, &weights);
    Tensor x = take(mb, "x");
    Tensor dx = alloc("attn.norm.dinput", {x_.b, x_.sl, x_.h});
    norm_bwd(em, cfg_, "attn.norm", x, d_ln1, ln1_w_, ln1_b_, dx, x_.b * x_.sl, x_.h);
    rt.release(x);
    rt.release(d_ln1);
    elementwise_op(em, Phase::backward, "attn.residual", "bwd", {dx, d_x2}, {dx},
                   ElementwiseFn::add, local_numel);
    weights.release(d_x2);
    finish_micro_batch(mb);
    em.flush();
    return dx;
  }

  // The W pass of a split backward (zero-bubble pipelines): the weight gradients B left.
  void backward_weights(Runtime& rt, int mb) override {
    const auto it = deferred_.find(mb);
    if (it == deferred_.end()) return;
    Emitter em = emitter(rt, mb);
    for (const WeightPass::Work& work : it->second) work(em);
    deferred_.erase(it);
    em.flush();
  }

 protected:
  std::unique_ptr<LayerBase> fresh_copy() const override {
    return std::make_unique<TransformerBlock>(cfg_, index_, batch_, ctx_);
  }
  Tensor make_measure_input(Runtime& rt) const override {
    return rt.alloc("x", {x_.b, x_.sl, x_.h}, batch_.dtype, kAct);
  }

 private:
  ElementwiseFn act_fn() const {
    return cfg_.activation == ActivationType::swiglu ? ElementwiseFn::swiglu : ElementwiseFn::gelu;
  }
  AttentionArgs attention_args() const {
    AttentionArgs a;
    a.batch = x_.b;
    a.heads = x_.al;
    a.kv_heads = x_.gl;
    a.seq = x_.s;
    a.head_dim = x_.d;
    a.causal = true;
    a.flash = cfg_.use_flash_attn;
    a.flash_version = cfg_.flash_attn_version;
    a.cp_size = static_cast<int>(x_.cp);
    a.cp_rank = x_.cp_rank;
    return a;
  }
  // What the attention kernel keeps for its backward besides Q, K, V and its output.
  std::size_t core_count() const {
    if (cfg_.use_flash_attn) return 1;  // logsumexp
    return cfg_.attention_dropout > 0 ? 3 : 1;  // probs (+ dropout mask, dropped probs)
  }
  static std::string core_key(std::size_t i) { return "core" + std::to_string(i); }

  // Context parallelism: this rank's K|V columns of qkv, all-gathered over the context-parallel
  // group into the whole sequence's [b, cp·s, 2·g·d] in member order, as Transformer Engine's
  // cp_comm_type "all_gather" does before attention. The backward gathers them again rather
  // than keeping cp times this rank's K/V through the step (TE does the same).
  Tensor gather_kv(Emitter& em, Phase ph, std::string_view sf, const Tensor& qkv) {
    Runtime& rt = em.rt();
    const DType dt = batch_.dtype;
    const I64 kv_cols = 2 * x_.gl * x_.d;
    Tensor local = rt.alloc(em.name("attn.cp.kv"), {x_.b, x_.s, kv_cols}, dt, kAct);
    MemcpyArgs split;
    split.rows = x_.b * x_.s;
    split.cols = kv_cols;
    split.src_ld = x_.nqkv;
    split.src_col = x_.al * x_.d;
    split.dst_ld = kv_cols;
    em.computed(ops::copy_columns(rt, ph, em.label("attn.cp.kv_split", sf), qkv, local, split, em.compute_issue()));
    Tensor full = rt.alloc(em.name("attn.cp.kv_gathered"), {x_.b, x_.cp * x_.s, kv_cols}, dt, kAct);
    const Handle h = ops::all_gather(rt, ph, em.label("attn.cp.kv_allgather", sf), {full}, ctx_.cp_group,
                                     CommShards{{local}, /*dim=*/1, false}, em.comm_issue(Stream::tp_comm));
    em.pending(h);
    em.release_after(local, h);
    return full;
  }
  // The backward's K/V gradient of the whole sequence, reduce-scattered back to this rank's
  // chunks and written into the K|V columns of d_qkv. Takes d_kv.
  void scatter_kv_grad(Emitter& em, const Tensor& d_kv, const Tensor& d_qkv) {
    Runtime& rt = em.rt();
    const I64 kv_cols = 2 * x_.gl * x_.d;
    Tensor local = rt.alloc(em.name("attn.cp.dkv"), {x_.b, x_.s, kv_cols}, batch_.dtype, kAct);
    const Handle h = ops::reduce_scatter(rt, Phase::backward, em.label("attn.cp.dkv_reducescatter", "bwd"), {d_kv},
                                         ctx_.cp_group, CommShards{{local}, /*dim=*/1, false},
                                         em.comm_issue(Stream::tp_comm));
    em.pending(h);
    em.release_after(d_kv, h);
    MemcpyArgs merge;
    merge.rows = x_.b * x_.s;
    merge.cols = kv_cols;
    merge.src_ld = kv_cols;
    merge.dst_ld = x_.nqkv;
    merge.dst_col = x_.al * x_.d;
    em.computed(ops::copy_columns(rt, Phase::backward, em.label("attn.cp.dkv_merge", "bwd"), local, d_qkv, merge,
                                  em.compute_issue()));
    rt.release(local);
  }

  // The attention kernel: returns its output [b, s, heads·d] and the tensors it keeps.
  std::pair<Tensor, std::vector<Tensor>> core_forward(Emitter& em, Phase ph, std::string_view sf,
                                                      const Tensor& qkv) {
    Runtime& rt = em.rt();
    const DType dt = batch_.dtype;
    const Tensor kv = x_.cp > 1 ? gather_kv(em, ph, sf, qkv) : Tensor{};
    Tensor out = rt.alloc(em.name("attn.core.out"), {x_.b, x_.s, x_.al * x_.d}, dt, kAct);
    std::vector<Tensor> kept;
    if (cfg_.use_flash_attn) {
      kept.push_back(
          rt.alloc(em.name("attn.core.logsumexp"), {x_.b, x_.al, x_.s}, DType::fp32, kAct));
    } else {
      const I64 keys = x_.cp * x_.s;
      kept.push_back(rt.alloc(em.name("attn.core.probs"), {x_.b, x_.al, x_.s, keys}, dt, kAct));
      if (cfg_.attention_dropout > 0) {
        kept.push_back(detail::alloc_byte_mask(rt, em.name("attn.core.dropout_mask"),
                                               x_.b * x_.al * x_.s * keys));
        kept.push_back(
            rt.alloc(em.name("attn.core.dropped"), {x_.b, x_.al, x_.s, keys}, dt, kAct));
      }
    }
    std::vector<Tensor> outputs{out};
    outputs.insert(outputs.end(), kept.begin(), kept.end());
    std::vector<Tensor> inputs{qkv};
    if (kv.valid()) inputs.push_back(kv);
    em.computed(ops::attention(rt, ph, em.label("attn.core", sf), std::move(inputs), std::move(outputs),
                               attention_args(), em.compute_issue()));
    if (kv.valid()) rt.release(kv);
    return {out, kept};
  }

  // The dense MLP on the norm's output `ln2` (kept for backward when `keep_all`): returns its output.
  Tensor mlp_forward(Emitter& em, int mb, Phase ph, std::string_view sf, const Tensor& ln2, bool keep_all) {
    Runtime& rt = em.rt();
    const DType dt = batch_.dtype;
    const I64 tokens = x_.b * x_.s, rows = x_.b * x_.sl;
    auto alloc = [&](const std::string& what, std::vector<I64> shape) { return activation(em, what, std::move(shape)); };
    auto keep = [&](const std::string& key, const Tensor& t) {
      if (keep_all) save(mb, key, t);
      else rt.release(t);
    };
    Tensor fc1_in = gather_full(em, ctx_, x_, SpMover::block_linear, sp_gather_dtype(x_, dt), ph, "mlp.fc1", sf, ln2);
    Tensor fc1 = alloc("mlp.fc1.out", {x_.b, x_.s, x_.fl * x_.m});
    gemm_op(em, ph, "mlp.fc1", sf, fc1_in, fc1_w_.w, fc1, linear(x_, overlapping(x_, GemmArgs{tokens, x_.fl * x_.m, x_.h}, Overlap::consumes_gather), false, false));
    bias_fwd(em, ph, "mlp.fc1.bias", sf, fc1, fc1_b_, tokens * x_.fl * x_.m);
    if (fc1_in.id != ln2.id) rt.release(fc1_in);
    keep("ln2", ln2);
    Tensor act = alloc("mlp.act.out", {x_.b, x_.s, x_.fl});
    elementwise_op(em, ph, "mlp.act", sf, {fc1}, {act}, act_fn(), tokens * x_.fl);
    keep("fc1", fc1);
    Tensor fc2 = alloc("mlp.fc2.out", {x_.b, x_.s, x_.h});
    gemm_op(em, ph, "mlp.fc2", sf, act, fc2_w_.w, fc2, linear(x_, overlapping(x_, GemmArgs{tokens, x_.h, x_.fl}, Overlap::feeds_scatter), false, false));
    keep("act", act);
    Tensor mlp_out = reduce_partial(em, ctx_, x_, SpMover::block_linear, dt, ph, "mlp.fc2", sf, fc2);
    bias_fwd(em, ph, "mlp.fc2.bias", sf, mlp_out, fc2_b_, rows * x_.h);
    return mlp_out;
  }

  // The dense MLP's backward from its output gradient `d_mlp` (`dy` when there is no dropout,
  // which the caller still owns): returns the gradient of its input ln2.
  Tensor mlp_backward(Emitter& em, int mb, const Tensor& d_mlp, const Tensor& dy, WeightPass& weights) {
    Runtime& rt = em.rt();
    const DType dt = batch_.dtype;
    const I64 tokens = x_.b * x_.s;
    auto alloc = [&](const std::string& what, std::vector<I64> shape) { return activation(em, what, std::move(shape)); };
    auto release_unless = [&](const Tensor& t, const Tensor& keep) {
      if (t.id != keep.id) weights.release(t);
    };
    bias_grad(em, "mlp.fc2.bias", d_mlp, fc2_b_, x_.b * x_.sl * x_.h);

    Handle gathered;
    Tensor d_fc2 = gather_full(em, ctx_, x_, SpMover::block_linear, dt, Phase::backward, "mlp.fc2", "bwd", d_mlp, false,
                               &gathered);
    if (d_fc2.id != d_mlp.id && d_mlp.id != dy.id) em.release_after(d_mlp, gathered);
    Tensor act = take(mb, "act");
    Tensor d_act = alloc("mlp.act.dinput", {x_.b, x_.s, x_.fl});
    GemmArgs fc2_dgrad{tokens, x_.fl, x_.h};
    fc2_dgrad.trans_b = true;
    gemm_op(em, Phase::backward, "mlp.fc2", "bwd", d_fc2, fc2_w_.w, d_act,
            linear(x_, overlapping(x_, fc2_dgrad, Overlap::consumes_gather), true, false));
    weights.run(em, {act, d_fc2}, [this, act, d_fc2, tokens](Emitter& e) {
      if (!fc2_w_.g.valid()) return;
      GemmArgs wgrad{x_.fl, x_.h, tokens};
      wgrad.trans_a = true;
      wgrad.accumulate = true;
      gemm_op(e, Phase::backward, "mlp.fc2", "bwd_w", act, d_fc2, fc2_w_.g, linear(x_, wgrad, false, true));
    });
    weights.release(act);
    release_unless(d_fc2, dy);
    Tensor fc1 = take(mb, "fc1");
    Tensor d_fc1 = alloc("mlp.fc1.doutput", {x_.b, x_.s, x_.fl * x_.m});
    elementwise_op(em, Phase::backward, "mlp.act", "bwd", {fc1, d_act}, {d_fc1}, act_fn(),
                   tokens * x_.fl, true);
    rt.release(fc1);
    rt.release(d_act);
    bias_grad(em, "mlp.fc1.bias", d_fc1, fc1_b_, tokens * x_.fl * x_.m);
    Tensor d_ln2 = column_parallel_bwd(em, ctx_, x_, dt, "mlp.fc1", take(mb, "ln2"), d_fc1,
                                       fc1_w_, x_.h, x_.fl * x_.m, false, true, &weights);
    return d_ln2;
  }

  // An activation tensor of this micro-batch's ops, in the activation dtype unless told.
  Tensor activation(Emitter& em, const std::string& what, std::vector<I64> shape) const {
    return activation(em, what, std::move(shape), batch_.dtype);
  }
  Tensor activation(Emitter& em, const std::string& what, std::vector<I64> shape, DType type) const {
    return em.rt().alloc(em.name(what), std::move(shape), type, kAct);
  }

  // ---- mixture of experts (TransformerConfig::moe(); op order in strategies/op.hpp, MoeArgs) ----
  MoeArgs moe_args(MoeStep step, bool backward) const {
    MoeArgs a;
    a.step = step;
    a.tokens = x_.b * x_.s;
    a.hidden = x_.h;
    a.experts = cfg_.num_moe_experts;
    a.topk = cfg_.moe_router_topk;
    a.capacity = capacity_;
    a.ep = ep_;
    a.backward = backward;
    a.aux_loss_coeff = static_cast<float>(cfg_.moe_aux_loss_coeff);
    // Under expert-tensor parallelism every tensor rank adds the load-balancing loss's gradient
    // to its router's partial output gradient, and those are summed (tensor_partial_gradients,
    // and the input gradient's reduction): each adds its 1/t share.
    if (backward && step == MoeStep::route && x_.t > 1) a.aux_loss_coeff /= static_cast<float>(x_.t);
    return a;
  }
  void moe_op(Emitter& em, Phase ph, std::string_view what, std::string_view sf, std::vector<Tensor> in,
              std::vector<Tensor> out, const MoeArgs& args) {
    em.computed(ops::moe(em.rt(), ph, em.label(what, sf), std::move(in), std::move(out), args, em.compute_issue()));
  }
  // Expert GEMM [E/ep, ep·C, ·] x [E/ep, ·, ·], batched over this rank's experts.
  GemmArgs expert_gemm(I64 n, I64 k) const {
    GemmArgs g{ep_ * capacity_, n, k};
    g.batch = local_experts_;
    return g;
  }
  // Every rank's tokens for this rank's experts: the buffer [E, C, h] of this rank's tokens (in
  // expert order, so that member j's experts are its j-th chunk) all-to-all over the expert-parallel
  // group, then each expert's rows together [E/ep, ep·C, h]. Takes `buffer`.
  Tensor to_experts(Emitter& em, Phase ph, std::string_view sf, const std::string& what, const Tensor& buffer) {
    if (ep_ == 1) return buffer;
    Runtime& rt = em.rt();
    em.pending(ops::all_to_all(rt, ph, em.label(what + ".alltoall", sf), buffer, ctx_.ep_group,
                               em.comm_issue(Stream::tp_comm)));
    Tensor grouped = rt.alloc(em.name(what + ".grouped"), {local_experts_, ep_ * capacity_, x_.h}, batch_.dtype, kAct);
    moe_op(em, ph, what + ".regroup", sf, {buffer}, {grouped}, moe_args(MoeStep::regroup, false));
    rt.release(buffer);
    return grouped;
  }
  // The way back: each expert's rows [E/ep, ep·C, h] to member order, all-to-all back to the
  // ranks the tokens came from: [E, C, h] of this rank's tokens. Takes `rows`.
  Tensor from_experts(Emitter& em, Phase ph, std::string_view sf, const std::string& what, const Tensor& rows) {
    if (ep_ == 1) return rows;
    Runtime& rt = em.rt();
    Tensor buffer = rt.alloc(em.name(what + ".members"), {cfg_.num_moe_experts, capacity_, x_.h}, batch_.dtype, kAct);
    moe_op(em, ph, what + ".regroup", sf, {rows}, {buffer}, moe_args(MoeStep::regroup, true));
    rt.release(rows);
    em.pending(ops::all_to_all(rt, ph, em.label(what + ".alltoall", sf), buffer, ctx_.ep_group,
                               em.comm_issue(Stream::tp_comm)));
    return buffer;
  }

  // Router, routing, dispatch to the experts (over the expert-parallel group), the experts' MLPs
  // batched, and the weighted combination back in token order. Expert-tensor parallelism (t > 1,
  // Megatron's expert_tensor_parallel_size equal to the tensor-parallel size): every rank of the
  // tensor group routes all of the micro-batch's tokens (all-gathered from the sequence shards
  // with SP) the same way, its experts hold its slice of each expert's width as a dense MLP's
  // ranks do, so the combined output (and the shared expert's) is a partial sum, all-reduced (or
  // reduce-scattered with SP) over the tensor group as the dense MLP's is.
  Tensor moe_forward(Emitter& em, int mb, Phase ph, std::string_view sf, const Tensor& ln2_local, bool keep_all) {
    Runtime& rt = em.rt();
    capacity_ = capacity_on(rt);
    const DType dt = batch_.dtype;
    // fe: this rank's slice of each expert's width
    const I64 T = x_.b * x_.s, E = cfg_.num_moe_experts, k = cfg_.moe_router_topk, fe = cfg_.expert_ffn_size() / x_.t;
    const I64 rows = ep_ * capacity_;
    Handle gathered;
    const Tensor ln2 = gather_full(em, ctx_, x_, SpMover::nccl, dt, ph, "mlp.moe", sf, ln2_local, false, &gathered);
    if (ln2.id != ln2_local.id) em.release_after(ln2_local, gathered);  // backward keeps the gathered tokens
    auto alloc = [&](const std::string& what, std::vector<I64> shape, DType type) {
      return activation(em, what, std::move(shape), type);
    };
    auto keep = [&](const std::string& key, const Tensor& t) {
      if (keep_all) save(mb, key, t);
      else rt.release(t);
    };
    Tensor logits = alloc("mlp.router.out", {x_.b, x_.s, E}, dt);
    gemm_op(em, ph, "mlp.router", sf, ln2, router_w_.w, logits, GemmArgs{T, E, x_.h});
    Tensor gates = alloc("mlp.route.gates", {T, k}, dt);
    Tensor experts = alloc("mlp.route.experts", {T, k}, DType::int32);
    Tensor slots = alloc("mlp.route.slots", {T, k}, DType::int32);
    Tensor probs = alloc("mlp.route.probs", {T, E}, DType::fp32);
    moe_op(em, ph, "mlp.route", sf, {logits}, {gates, experts, slots, probs}, moe_args(MoeStep::route, false));
    rt.release(logits);
    Tensor buffer = alloc("mlp.dispatch.out", {E, capacity_, x_.h}, dt);
    moe_op(em, ph, "mlp.dispatch", sf, {ln2, experts, slots}, {buffer}, moe_args(MoeStep::dispatch, false));
    Tensor grouped = to_experts(em, ph, sf, "mlp.dispatch", buffer);
    Tensor fc1 = alloc("mlp.experts.fc1.out", {local_experts_, rows, fe * x_.m}, dt);
    gemm_op(em, ph, "mlp.experts.fc1", sf, grouped, fc1_w_.w, fc1, expert_gemm(fe * x_.m, x_.h));
    keep("grouped", grouped);
    Tensor act = alloc("mlp.experts.act.out", {local_experts_, rows, fe}, dt);
    elementwise_op(em, ph, "mlp.experts.act", sf, {fc1}, {act}, act_fn(), local_experts_ * rows * fe);
    keep("fc1", fc1);
    Tensor out = alloc("mlp.experts.fc2.out", {local_experts_, rows, x_.h}, dt);
    gemm_op(em, ph, "mlp.experts.fc2", sf, act, fc2_w_.w, out, expert_gemm(x_.h, fe));
    keep("act", act);
    Tensor expert_out = from_experts(em, ph, sf, "mlp.combine", out);
    Tensor y = alloc("mlp.combine.out", {x_.b, x_.s, x_.h}, dt);
    moe_op(em, ph, "mlp.combine", sf, {expert_out, experts, slots, gates}, {y}, moe_args(MoeStep::combine, false));
    if (const I64 shared = cfg_.moe_shared_expert_intermediate_size / x_.t; shared > 0) {
      // The shared expert on every token, added to the routed experts' sum.
      Tensor s_fc1 = alloc("mlp.shared.fc1.out", {x_.b, x_.s, shared * x_.m}, dt);
      gemm_op(em, ph, "mlp.shared.fc1", sf, ln2, shared_fc1_w_.w, s_fc1, GemmArgs{T, shared * x_.m, x_.h});
      Tensor s_act = alloc("mlp.shared.act.out", {x_.b, x_.s, shared}, dt);
      elementwise_op(em, ph, "mlp.shared.act", sf, {s_fc1}, {s_act}, act_fn(), T * shared);
      keep("shared.fc1", s_fc1);
      Tensor s_out = alloc("mlp.shared.fc2.out", {x_.b, x_.s, x_.h}, dt);
      gemm_op(em, ph, "mlp.shared.fc2", sf, s_act, shared_fc2_w_.w, s_out, GemmArgs{T, x_.h, shared});
      keep("shared.act", s_act);
      elementwise_op(em, ph, "mlp.shared.add", sf, {y, s_out}, {y}, ElementwiseFn::add, T * x_.h);
      rt.release(s_out);
    }
    keep("ln2", ln2);
    keep("expert_out", expert_out);
    keep("gates", gates);
    keep("experts", experts);
    keep("slots", slots);
    keep("probs", probs);
    return reduce_partial(em, ctx_, x_, SpMover::nccl, dt, ph, "mlp.moe", sf, y);
  }

  // The mixture of experts' backward from its output gradient `d_y` (`dy` when there is no
  // dropout, which the caller still owns): returns the gradient of its input ln2.
  // Under expert-tensor parallelism the gradients below the combination are partial sums over the
  // tensor group (the gates' gradient reads this rank's partial output), all linear in them: the
  // router's, the experts' and the shared expert's input gradients add up into one partial sum,
  // reduced over the group at the end as the dense MLP's input gradient is.
  Tensor moe_backward(Emitter& em, int mb, const Tensor& d_y_local, const Tensor& dy, WeightPass& weights) {
    Runtime& rt = em.rt();
    capacity_ = capacity_on(rt);
    const Phase ph = Phase::backward;
    const I64 T = x_.b * x_.s, E = cfg_.num_moe_experts, k = cfg_.moe_router_topk, fe = cfg_.expert_ffn_size() / x_.t;
    const I64 rows = ep_ * capacity_;
    Handle gathered;
    const Tensor d_y = gather_full(em, ctx_, x_, SpMover::nccl, batch_.dtype, ph, "mlp.moe", "bwd", d_y_local, false, &gathered);
    if (d_y.id != d_y_local.id && d_y_local.id != dy.id) em.release_after(d_y_local, gathered);
    auto alloc = [&](const std::string& what, std::vector<I64> shape) { return activation(em, what, std::move(shape)); };
    // A weight gradient of a batched expert GEMM (or the router's), deferred with a split backward.
    auto weight_gradient = [&](const char* what, const Tensor& in, const Tensor& d_out, const Param& w, GemmArgs g) {
      g.trans_a = true;
      g.accumulate = true;
      weights.run(em, {in, d_out}, [=, this](Emitter& e) {
        if (w.g.valid()) gemm_op(e, Phase::backward, what, "bwd_w", in, d_out, w.g, g);
      });
      weights.release(in);
      weights.release(d_out);
    };
    Tensor expert_out = take(mb, "expert_out"), gates = take(mb, "gates"), experts = take(mb, "experts");
    Tensor slots = take(mb, "slots"), probs = take(mb, "probs");
    Tensor d_out = alloc("mlp.combine.doutput", {E, capacity_, x_.h});
    Tensor d_gates = alloc("mlp.combine.dgates", {T, k});
    moe_op(em, ph, "mlp.combine", "bwd", {d_y, expert_out, experts, slots, gates}, {d_out, d_gates},
           moe_args(MoeStep::combine, true));
    rt.release(expert_out);
    const I64 shared = cfg_.moe_shared_expert_intermediate_size / x_.t;
    Tensor d_s_fc1;
    if (shared > 0) {
      // The shared expert's backward down to its fc1 output gradient; its input gradient joins
      // the routed experts' below.
      Tensor s_act = take(mb, "shared.act");
      Tensor d_s_act = alloc("mlp.shared.act.dinput", {x_.b, x_.s, shared});
      GemmArgs dgrad{T, shared, x_.h};
      dgrad.trans_b = true;
      gemm_op(em, ph, "mlp.shared.fc2", "bwd", d_y, shared_fc2_w_.w, d_s_act, dgrad);
      GemmArgs wgrad{shared, x_.h, T};
      wgrad.trans_a = true;
      wgrad.accumulate = true;
      weights.run(em, {s_act, d_y}, [=, this](Emitter& e) {
        if (shared_fc2_w_.g.valid()) gemm_op(e, Phase::backward, "mlp.shared.fc2", "bwd_w", s_act, d_y, shared_fc2_w_.g, wgrad);
      });
      weights.release(s_act);
      if (d_y.id != dy.id) weights.release(d_y);
      Tensor s_fc1 = take(mb, "shared.fc1");
      d_s_fc1 = alloc("mlp.shared.fc1.doutput", {x_.b, x_.s, shared * x_.m});
      elementwise_op(em, ph, "mlp.shared.act", "bwd", {s_fc1, d_s_act}, {d_s_fc1}, act_fn(), T * shared, true);
      rt.release(s_fc1);
      rt.release(d_s_act);
    } else if (d_y.id != dy.id) {
      rt.release(d_y);
    }
    Tensor d_rows = to_experts(em, ph, "bwd", "mlp.combine", d_out);
    Tensor d_act = alloc("mlp.experts.act.dinput", {local_experts_, rows, fe});
    GemmArgs fc2_dgrad = expert_gemm(fe, x_.h);
    fc2_dgrad.trans_b = true;
    gemm_op(em, ph, "mlp.experts.fc2", "bwd", d_rows, fc2_w_.w, d_act, fc2_dgrad);
    GemmArgs fc2_wgrad{fe, x_.h, rows};
    fc2_wgrad.batch = local_experts_;
    weight_gradient("mlp.experts.fc2", take(mb, "act"), d_rows, fc2_w_, fc2_wgrad);
    Tensor fc1 = take(mb, "fc1");
    Tensor d_fc1 = alloc("mlp.experts.fc1.doutput", {local_experts_, rows, fe * x_.m});
    elementwise_op(em, ph, "mlp.experts.act", "bwd", {fc1, d_act}, {d_fc1}, act_fn(), local_experts_ * rows * fe, true);
    rt.release(fc1);
    rt.release(d_act);
    Tensor d_grouped = alloc("mlp.experts.fc1.dinput", {local_experts_, rows, x_.h});
    GemmArgs fc1_dgrad = expert_gemm(x_.h, fe * x_.m);
    fc1_dgrad.trans_b = true;
    gemm_op(em, ph, "mlp.experts.fc1", "bwd", d_fc1, fc1_w_.w, d_grouped, fc1_dgrad);
    GemmArgs fc1_wgrad{x_.h, fe * x_.m, rows};
    fc1_wgrad.batch = local_experts_;
    weight_gradient("mlp.experts.fc1", take(mb, "grouped"), d_fc1, fc1_w_, fc1_wgrad);
    Tensor d_buffer = from_experts(em, ph, "bwd", "mlp.dispatch", d_grouped);
    Tensor d_ln2 = alloc("mlp.dispatch.dinput", {x_.b, x_.s, x_.h});
    moe_op(em, ph, "mlp.dispatch", "bwd", {d_buffer, experts, slots}, {d_ln2}, moe_args(MoeStep::dispatch, true));
    rt.release(d_buffer);
    rt.release(slots);
    Tensor d_logits = alloc("mlp.router.doutput", {x_.b, x_.s, E});
    std::vector<Tensor> route_in{gates, experts, probs, d_gates};
    MoeArgs route = moe_args(MoeStep::route, true);
    Tensor counts;
    if (x_.cp > 1 && cfg_.moe_aux_loss_coeff > 0) {
      // Context parallelism: this rank routed its part of each sequence; the load-balancing
      // loss is over the whole sequences (as one rank's), so its picks per expert are summed over
      // the context-parallel group first.
      counts = rt.alloc(em.name("mlp.route.counts"), {E}, DType::fp32, kAct);
      moe_op(em, ph, "mlp.route.count", "bwd", {experts}, {counts}, moe_args(MoeStep::count, true));
      em.pending(ops::all_reduce(rt, ph, em.label("mlp.route.count.allreduce", "bwd"), counts, ctx_.cp_group,
                                 em.comm_issue(Stream::tp_comm)));
      route_in.push_back(counts);
      route.balance_tokens = T * x_.cp;
    }
    moe_op(em, ph, "mlp.route", "bwd", route_in, {d_logits}, route);
    if (counts.valid()) rt.release(counts);
    for (const Tensor& t : {gates, experts, probs, d_gates}) rt.release(t);
    GemmArgs router_dgrad{T, x_.h, E};
    router_dgrad.trans_b = true;
    router_dgrad.accumulate = true;  // onto the experts' part of the input gradient
    gemm_op(em, ph, "mlp.router", "bwd", d_logits, router_w_.w, d_ln2, router_dgrad);
    Tensor ln2 = take(mb, "ln2");
    if (shared > 0) {
      GemmArgs s_dgrad{T, x_.h, shared * x_.m};
      s_dgrad.trans_b = true;
      s_dgrad.accumulate = true;
      gemm_op(em, ph, "mlp.shared.fc1", "bwd", d_s_fc1, shared_fc1_w_.w, d_ln2, s_dgrad);
      GemmArgs s_wgrad{x_.h, shared * x_.m, T};
      s_wgrad.trans_a = true;
      s_wgrad.accumulate = true;
      weights.run(em, {d_s_fc1}, [=, this](Emitter& e) {
        if (shared_fc1_w_.g.valid()) gemm_op(e, Phase::backward, "mlp.shared.fc1", "bwd_w", ln2, d_s_fc1, shared_fc1_w_.g, s_wgrad);
      });
      weights.release(d_s_fc1);
    }
    weight_gradient("mlp.router", ln2, d_logits, router_w_, GemmArgs{x_.h, E, T});
    return reduce_partial(em, ctx_, x_, SpMover::nccl, batch_.dtype, ph, "mlp.moe", "bwd", d_ln2);
  }

  // Dropout on the branch output, then the residual add; takes `branch`, returns the new
  // residual stream. The mask is saved under part + ".mask" when `keep`.
  Tensor dropout_add(Emitter& em, int mb, const std::string& part, Phase ph, std::string_view sf,
                     const Tensor& residual, const Tensor& branch, bool keep) {
    Runtime& rt = em.rt();
    const DType dt = batch_.dtype;
    const I64 numel = x_.b * x_.sl * x_.h;
    Tensor y = rt.alloc(em.name(part + ".residual.out"), {x_.b, x_.sl, x_.h}, dt, kAct);
    if (cfg_.hidden_dropout > 0) {
      Tensor dropped = rt.alloc(em.name(part + ".dropout.out"), {x_.b, x_.sl, x_.h}, dt, kAct);
      Tensor mask = detail::alloc_byte_mask(rt, em.name(part + ".dropout.mask"), numel);
      elementwise_op(em, ph, part + ".dropout", sf, {branch}, {dropped, mask},
                     ElementwiseFn::dropout, numel);
      rt.release(branch);
      elementwise_op(em, ph, part + ".residual", sf, {residual, dropped}, {y}, ElementwiseFn::add,
                     numel);
      rt.release(dropped);
      if (keep) save(mb, part + ".mask", mask);
      else rt.release(mask);
    } else {
      elementwise_op(em, ph, part + ".residual", sf, {residual, branch}, {y}, ElementwiseFn::add,
                     numel);
      rt.release(branch);
    }
    return y;
  }

  // Backward of the dropout on a branch: returns the branch-output gradient (`dy` itself
  // when there is no dropout; the caller still owns `dy`).
  Tensor dropout_bwd(Emitter& em, int mb, const std::string& part, const Tensor& dy) {
    if (cfg_.hidden_dropout <= 0) return dy;
    Runtime& rt = em.rt();
    const I64 numel = x_.b * x_.sl * x_.h;
    Tensor mask = take(mb, part + ".mask");
    Tensor d = rt.alloc(em.name(part + ".dropout.dinput"), {x_.b, x_.sl, x_.h}, batch_.dtype, kAct);
    elementwise_op(em, Phase::backward, part + ".dropout", "bwd", {dy, mask}, {d},
                   ElementwiseFn::dropout, numel, true);
    rt.release(mask);
    return d;
  }

  Tensor forward_impl(Runtime& rt, const Tensor& x, int mb, bool recompute_pass) {
    Emitter em = emitter(rt, mb);
    const DType dt = batch_.dtype;
    const Phase ph = recompute_pass ? Phase::backward : Phase::forward;
    const std::string_view sf = recompute_pass ? "recompute" : "fwd";
    const bool keep_all = ctx_.recompute != Recompute::full || recompute_pass;
    const bool keep_core = keep_all && ctx_.recompute != Recompute::selective;
    auto keep = [&](const std::string& key, const Tensor& t, bool k) {
      if (k) save(mb, key, t);
      else rt.release(t);
    };
    auto alloc = [&](const std::string& what, std::vector<I64> shape) {
      return rt.alloc(em.name(what), std::move(shape), dt, kAct);
    };
    const I64 tokens = x_.b * x_.s;
    const I64 rows = x_.b * x_.sl;

    // ---- attention ----
    save(mb, "x", x);  // the layer input: the norm's backward (and full recompute) needs it
    Tensor ln1 = activation(em, "attn.norm.out", {x_.b, x_.sl, x_.h}, norm_out_dtype(x_, dt, true));
    norm_fwd(em, cfg_, ph, "attn.norm", sf, x, ln1_w_, ln1_b_, ln1, rows, x_.h);
    Tensor qkv_in = gather_full(em, ctx_, x_, SpMover::block_linear, sp_gather_dtype(x_, dt), ph, "attn.qkv", sf, ln1);
    Tensor qkv = alloc("attn.qkv.out", {x_.b, x_.s, x_.nqkv});
    gemm_op(em, ph, "attn.qkv", sf, qkv_in, qkv_w_.w, qkv, linear(x_, overlapping(x_, GemmArgs{tokens, x_.nqkv, x_.h}, Overlap::consumes_gather), false, false));
    bias_fwd(em, ph, "attn.qkv.bias", sf, qkv, qkv_b_, tokens * x_.nqkv);
    if (qkv_in.id != ln1.id) rt.release(qkv_in);
    keep("ln1", ln1, keep_all);
    auto [ctx_out, core] = core_forward(em, ph, sf, qkv);
    for (std::size_t i = 0; i < core.size(); ++i) keep(core_key(i), core[i], keep_core);
    keep("qkv", qkv, keep_all);
    Tensor proj = alloc("attn.proj.out", {x_.b, x_.s, x_.h});
    gemm_op(em, ph, "attn.proj", sf, ctx_out, proj_w_.w, proj, linear(x_, overlapping(x_, GemmArgs{tokens, x_.h, x_.al * x_.d}, Overlap::feeds_scatter), false, false));
    keep("ctx", ctx_out, keep_all);
    Tensor attn_out = reduce_partial(em, ctx_, x_, SpMover::block_linear, dt, ph, "attn.proj", sf, proj);
    bias_fwd(em, ph, "attn.proj.bias", sf, attn_out, proj_b_, rows * x_.h);
    Tensor x2 = dropout_add(em, mb, "attn", ph, sf, x, attn_out, keep_all);

    // ---- MLP ----
    Tensor ln2 = activation(em, "mlp.norm.out", {x_.b, x_.sl, x_.h}, norm_out_dtype(x_, dt, !moe_));
    norm_fwd(em, cfg_, ph, "mlp.norm", sf, x2, ln2_w_, ln2_b_, ln2, rows, x_.h);
    Tensor mlp_out = moe_ ? moe_forward(em, mb, ph, sf, ln2, keep_all) : mlp_forward(em, mb, ph, sf, ln2, keep_all);
    Tensor y = dropout_add(em, mb, "mlp", ph, sf, x2, mlp_out, keep_all);
    keep("x2", x2, keep_all);
    em.flush();
    return y;
  }

  TransformerConfig cfg_;
  int index_;
  Dims x_;
  Param ln1_w_, ln1_b_, qkv_w_, qkv_b_, proj_w_, proj_b_, ln2_w_, ln2_b_, fc1_w_, fc1_b_, fc2_w_,
      fc2_b_;
  // Mixture of experts: the router, this rank's share of the experts (fc1_w_, fc2_w_ hold them,
  // [E/ep, h, f·m] and [E/ep, f, h]), the places per expert for this rank's micro-batch tokens.
  bool moe_ = false;  // this block has experts (TransformerConfig::moe_layer)
  Param router_w_, shared_fc1_w_, shared_fc2_w_;
  // capacity_: rows of each expert's buffer, set by moe_forward/moe_backward for their runtime
  // (capacity_on) and read by the ops they emit, deferred weight passes included.
  I64 ep_ = 1, local_experts_ = 0, capacity_ = 0;
  std::map<int, std::vector<WeightPass::Work>> deferred_;  // split backward: W work by micro-batch
};

// ---------------------------------------------------------------- LM head + loss

class LMHead final : public VocabTableLayer {
 public:
  LMHead(TransformerConfig cfg, BatchShape batch, ParallelContext ctx,
         std::shared_ptr<SharedTable> table)
      : VocabTableLayer("lm_head", std::move(cfg), batch, std::move(ctx), std::move(table)) {}

  std::int64_t parameter_count() const override { return head_parameter_count(cfg_); }
  std::int64_t local_parameter_count() const override {
    return norm_params(cfg_) + (cfg_.tied_embeddings ? 0 : x_.vl * x_.h);
  }
  // With SP the final norm sees this rank's sequence shard only.
  std::vector<Tensor> tensor_partial_gradients() const override {
    if (!x_.sp) return {};
    std::vector<Tensor> out;
    for (const Param* p : {&norm_w_, &norm_b_})
      if (p->g.valid()) out.push_back(p->g);
    return out;
  }

  void allocate(Runtime& rt, bool g) override {
    clear_parameters();
    norm_w_.w = add_parameter(rt, "norm.weight", {x_.h}, g, &norm_w_.g);
    if (cfg_.norm == NormType::layernorm)
      norm_b_.w = add_parameter(rt, "norm.bias", {x_.h}, g, &norm_b_.g);
    // Untied: the output layer. Tied without the embedding on this runtime: its copy, the same
    // logical tensor as the embedding's table (Megatron initialises it from the table).
    if (cfg_.tied_embeddings)
      bind_vocab_table(rt, out_, "word_embedding_copy.weight", g, "embedding.word.weight");
    else
      bind_vocab_table(rt, out_, "output.weight", g, "lm_head.output.weight");
  }

  Tensor forward(Runtime& rt, const Tensor& x, int mb) override {
    Emitter em = emitter(rt, mb);
    const DType dt = batch_.dtype;
    const Phase ph = Phase::forward;
    const I64 tokens = x_.b * x_.s;
    Tensor ln = rt.alloc(em.name("norm.out"), {x_.b, x_.sl, x_.h}, dt, kAct);
    norm_fwd(em, cfg_, ph, "norm", "fwd", x, norm_w_, norm_b_, ln, x_.b * x_.sl, x_.h);
    save(mb, "x", x);
    Tensor in = gather_full(em, ctx_, x_, SpMover::nccl, dt, ph, "output", "fwd", ln);
    Tensor logits = rt.alloc(em.name("output.logits"), {x_.b, x_.s, x_.vl}, dt, kAct);
    GemmArgs args{tokens, x_.vl, x_.h};
    args.trans_b = true;
    args.weight_pass = weight_pass(x_, args, false);
    gemm_op(em, ph, "output", "fwd", in, out_.w, logits, args);
    if (in.id != ln.id) rt.release(in);
    save(mb, "ln", ln);
    Tensor labels = sequence_data(rt, "mb" + std::to_string(mb) + ".labels", batch_, ctx_);
    Tensor softmax = rt.alloc(em.name("loss.softmax"), {tokens, x_.vl}, DType::fp32, kAct);
    Tensor stats = rt.alloc(em.name("loss.stats"), {tokens, 2}, DType::fp32, kAct);
    cross_entropy_fwd(em, logits, labels, softmax, stats);
    rt.release(logits);
    Tensor loss = rt.alloc(em.name("loss"), {1}, DType::fp32, kAct);
    elementwise_op(em, ph, "loss.mean", "fwd", {stats}, {loss}, ElementwiseFn::scale, tokens);
    rt.release(stats);
    save(mb, "softmax", softmax);
    save(mb, "labels", labels);
    em.flush();
    return loss;
  }

  Tensor backward(Runtime& rt, const Tensor& d_loss, int mb) override {
    Emitter em = emitter(rt, mb);
    const DType dt = batch_.dtype;
    if (d_loss.valid()) rt.release(d_loss);
    Tensor softmax = take(mb, "softmax");
    Tensor labels = take(mb, "labels");
    Tensor d_logits = rt.alloc(em.name("output.dlogits"), {x_.b, x_.s, x_.vl}, dt, kAct);
    em.computed(ops::cross_entropy(rt, Phase::backward, em.label("loss", "bwd"),
                                   {softmax, labels}, {d_logits}, loss_args(LossStep::full, true),
                                   em.compute_issue()));
    rt.release(softmax);
    rt.release(labels);
    Dims in_bf16 = x_;  // the output layer's GEMMs stay out of FP8
    in_bf16.fp8 = Fp8Recipe::none;
    Tensor d_ln = column_parallel_bwd(em, ctx_, in_bf16, dt, "output", take(mb, "ln"), d_logits, out_,
                                      x_.h, x_.vl, /*w_out_in=*/true, /*block_linear=*/false);
    Tensor x = take(mb, "x");
    Tensor dx = rt.alloc(em.name("norm.dinput"), {x_.b, x_.sl, x_.h}, dt, kAct);
    norm_bwd(em, cfg_, "norm", x, d_ln, norm_w_, norm_b_, dx, x_.b * x_.sl, x_.h);
    rt.release(x);
    rt.release(d_ln);
    finish_micro_batch(mb);
    em.flush();
    return dx;
  }

 protected:
  std::unique_ptr<LayerBase> fresh_copy() const override {
    return std::make_unique<LMHead>(cfg_, batch_, ctx_, std::make_shared<SharedTable>());
  }
  Tensor make_measure_input(Runtime& rt) const override {
    return rt.alloc("x", {x_.b, x_.sl, x_.h}, batch_.dtype, kAct);
  }

 private:
  LossArgs loss_args(LossStep step, bool backward) const {
    LossArgs a{x_.b * x_.s, x_.vl, backward};
    a.vocab_offset = x_.tp_rank * x_.vl;
    a.step = step;
    a.fused = cfg_.cross_entropy_loss_fusion;
    return a;
  }

  // Softmax cross-entropy of the logits into softmax and per-token stats {loss, lse}. With the
  // vocabulary split over tensor parallelism it is Megatron's vocab-parallel form (LossStep):
  // the global row max and the global sum of exponentials (with the label's logit, which one
  // rank holds) are all-reduced between three local steps.
  void cross_entropy_fwd(Emitter& em, const Tensor& logits, const Tensor& labels,
                         const Tensor& softmax, const Tensor& stats) {
    Runtime& rt = em.rt();
    const Phase ph = Phase::forward;
    if (x_.t == 1) {
      em.computed(ops::cross_entropy(rt, ph, em.label("loss", "fwd"), {logits, labels},
                                     {softmax, stats}, loss_args(LossStep::full, false),
                                     em.compute_issue()));
      return;
    }
    const I64 tokens = x_.b * x_.s;
    Tensor row_max = rt.alloc(em.name("loss.max"), {tokens}, DType::fp32, kAct);
    em.computed(ops::cross_entropy(rt, ph, em.label("loss.max", "fwd"), {logits}, {row_max},
                                   loss_args(LossStep::shard_max, false), em.compute_issue()));
    tp_comm(em, ctx_, OpKind::all_reduce, ph, "loss.max.allreduce", "fwd", row_max, false,
            ReduceOp::max);
    Tensor sums = rt.alloc(em.name("loss.sum_exp"), {tokens, 2}, DType::fp32, kAct);
    em.computed(ops::cross_entropy(rt, ph, em.label("loss.sum_exp", "fwd"), {logits, labels, row_max},
                                   {sums}, loss_args(LossStep::shard_sum_exp, false),
                                   em.compute_issue()));
    tp_comm(em, ctx_, OpKind::all_reduce, ph, "loss.sum_exp.allreduce", "fwd", sums);
    em.computed(ops::cross_entropy(rt, ph, em.label("loss", "fwd"), {logits, labels, row_max, sums},
                                   {softmax, stats}, loss_args(LossStep::shard_finish, false),
                                   em.compute_issue()));
    rt.release(row_max);
    rt.release(sums);
  }

  const Param& vocab_table() const override { return out_; }
  Param norm_w_, norm_b_, out_;
};

}  // namespace

// ---------------------------------------------------------------- analytic figures

void validate(const TransformerConfig& cfg) {
  auto fail = [&](const std::string& field, const std::string& why) {
    throw std::invalid_argument("transformer '" + cfg.name + "': " + field + " " + why);
  };
  if (cfg.num_layers < 1) fail("num_layers", "must be >= 1");
  if (cfg.hidden_size < 1) fail("hidden_size", "must be >= 1");
  if (cfg.num_attention_heads < 1) fail("num_attention_heads", "must be >= 1");
  if (cfg.num_query_groups < 0) fail("num_query_groups", "must be >= 0");
  if (cfg.num_attention_heads % cfg.query_groups())
    fail("num_query_groups", "must divide num_attention_heads");
  if (cfg.kv_channels == 0 && cfg.hidden_size % cfg.num_attention_heads)
    fail("hidden_size", "must be divisible by num_attention_heads (or set kv_channels)");
  if (cfg.kv_channels < 0) fail("kv_channels", "must be >= 0");
  if (cfg.ffn_hidden_size < 0) fail("ffn_hidden_size", "must be >= 0");
  if (cfg.vocab_size < 1) fail("vocab_size", "must be >= 1");
  if (cfg.seq_length < 1) fail("seq_length", "must be >= 1");
  if (cfg.position == PositionEmbeddingType::learned &&
      cfg.max_positions() < cfg.seq_length)
    fail("max_position_embeddings", "must be >= seq_length with learned positions");
  if (cfg.hidden_dropout < 0 || cfg.hidden_dropout >= 1) fail("hidden_dropout", "must be in [0,1)");
  if (cfg.attention_dropout < 0 || cfg.attention_dropout >= 1)
    fail("attention_dropout", "must be in [0,1)");
  if (cfg.flash_attn_version < 0 || cfg.flash_attn_version > limits::kFlashAttentionVersion.max)
    fail("flash_attn_version", "must be 1, 2 or 3 (0: the device profile's)");
  if (cfg.flash_attn_version > 0 && !cfg.use_flash_attn) fail("flash_attn_version", "needs use_flash_attn: true");
  if (cfg.num_moe_experts < 0) fail("num_moe_experts", "must be >= 0");
  if (!cfg.moe()) return;
  if (cfg.moe_router_topk < 1 || cfg.moe_router_topk > cfg.num_moe_experts)
    fail("moe_router_topk", "must be between 1 and num_moe_experts");
  if (cfg.moe_ffn_hidden_size < 0) fail("moe_ffn_hidden_size", "must be >= 0");
  if (cfg.moe_shared_expert_intermediate_size < 0) fail("moe_shared_expert_intermediate_size", "must be >= 0");
  if (cfg.moe_first_dense_layers < 0 || cfg.moe_first_dense_layers > cfg.num_layers)
    fail("moe_first_dense_layers", "must be between 0 and num_layers");
  if (!(cfg.moe_expert_capacity_factor >= 0)) fail("moe_expert_capacity_factor", "must be >= 0 (0: dropless)");
  if (!(cfg.moe_router_load_imbalance == 0 || cfg.moe_router_load_imbalance >= 1))
    fail("moe_router_load_imbalance", "must be 0 (a balanced router's floor) or a max/mean load ratio >= 1");
  if (!(cfg.moe_aux_loss_coeff >= 0)) fail("moe_aux_loss_coeff", "must be >= 0");
  if (cfg.bias) fail("bias", "must be false with experts (num_moe_experts): experts and router have no biases");
}

namespace {
// Blom's (1958) approximation of the expected largest of n standard normal draws,
// Φ⁻¹((n - 0.375) / (n + 0.25)); Φ⁻¹ by bisection on erfc (exact to 1e-9).
double expected_largest_normal(std::int64_t n) {
  if (n <= 1) return 0;
  const double p = (static_cast<double>(n) - 0.375) / (static_cast<double>(n) + 0.25);
  double lo = -10, hi = 10;
  for (int i = 0; i < 80; ++i) {
    const double mid = (lo + hi) / 2;
    (0.5 * std::erfc(-mid / std::sqrt(2.0)) < p ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}
}  // namespace

std::int64_t TransformerConfig::expected_busiest_expert_rows(std::int64_t tokens) const {
  const double E = static_cast<double>(num_moe_experts), T = static_cast<double>(tokens);
  const double share = std::min(1.0, static_cast<double>(moe_router_topk) / E);  // P(a token picks an expert)
  const double mean = T * share;
  const double rows = moe_router_load_imbalance > 0
                          ? moe_router_load_imbalance * mean
                          : mean + expected_largest_normal(num_moe_experts) * std::sqrt(T * share * (1 - share));
  return std::clamp<std::int64_t>(static_cast<std::int64_t>(std::ceil(rows - 1e-9)), 1, tokens);
}

std::int64_t TransformerConfig::priced_expert_rows(std::int64_t tokens) const {
  return moe_expert_capacity_factor > 0 ? expert_capacity(tokens) : expected_busiest_expert_rows(tokens);
}

std::int64_t TransformerConfig::expert_capacity(std::int64_t tokens) const {
  if (moe_expert_capacity_factor <= 0) return tokens;
  const double c = std::ceil(moe_expert_capacity_factor * static_cast<double>(tokens) *
                             static_cast<double>(moe_router_topk) / static_cast<double>(num_moe_experts));
  return std::clamp<std::int64_t>(static_cast<std::int64_t>(c), 1, tokens);
}

std::int64_t embedding_parameter_count(const TransformerConfig& cfg) {
  const I64 positions = cfg.position == PositionEmbeddingType::learned ? cfg.max_positions() : 0;
  return checked_sum_of_products({{cfg.vocab_size, cfg.hidden_size}, {positions, cfg.hidden_size}},
                                 "transformer '" + cfg.name + "': embedding parameters (vocab_size x hidden_size)");
}

namespace {
// One block's parameters with `experts` of its MoE experts (all of them, or a token's k);
// `moe_layer` false: a dense block.
I64 block_parameters_with(const TransformerConfig& cfg, I64 experts, bool moe_layer) {
  const I64 h = cfg.hidden_size, m = mlp_mult(cfg), b = cfg.bias ? 1 : 0;
  const I64 q = qkv_width(cfg), a = cfg.num_attention_heads, d = cfg.head_dim();
  if (moe_layer) {
    const I64 f = cfg.expert_ffn_size(), shared = cfg.moe_shared_expert_intermediate_size;
    return checked_sum_of_products({{2, norm_params(cfg)}, {h, q}, {a, d, h}, {h, cfg.num_moe_experts},  // router
                                    {experts, h, f * m}, {experts, f, h}, {h, shared, m}, {shared, h}},
                                   "transformer '" + cfg.name + "': parameters per block (experts)");
  }
  const I64 f = cfg.ffn_size();
  return checked_sum_of_products({{2, norm_params(cfg)}, {h, q}, {a, d, h}, {h, f, m}, {f, h},  // weights
                                  {b, q}, {b, h}, {b, f, m}, {b, h}},                           // biases
                                 "transformer '" + cfg.name + "': parameters per block");
}

// Every block's parameters with `experts` per MoE block: the dense first ones, then the rest.
I64 blocks_parameters_with(const TransformerConfig& cfg, I64 experts) {
  const I64 dense = cfg.moe() ? std::min(cfg.moe_first_dense_layers, cfg.num_layers) : cfg.num_layers;
  return checked_sum_of_products({{dense, block_parameters_with(cfg, 0, false)},
                                  {cfg.num_layers - dense, cfg.moe() ? block_parameters_with(cfg, experts, true) : 0}},
                                 "transformer '" + cfg.name + "': parameters (num_layers x parameters per block)");
}
}  // namespace

std::int64_t block_parameter_count(const TransformerConfig& cfg) {
  return block_parameters_with(cfg, cfg.num_moe_experts, cfg.moe());
}

std::int64_t block_parameter_count(const TransformerConfig& cfg, std::int64_t layer) {
  return block_parameters_with(cfg, cfg.num_moe_experts, cfg.moe_layer(layer));
}

std::int64_t active_parameter_count(const TransformerConfig& cfg) {
  if (!cfg.moe()) return parameter_count(cfg);
  return checked_sum_of_products({{embedding_parameter_count(cfg)},
                                  {blocks_parameters_with(cfg, cfg.moe_router_topk)},
                                  {head_parameter_count(cfg)}},
                                 "transformer '" + cfg.name + "': active parameters");
}

std::int64_t head_parameter_count(const TransformerConfig& cfg) {
  return checked_sum_of_products({{norm_params(cfg)}, {cfg.tied_embeddings ? 0 : cfg.vocab_size, cfg.hidden_size}},
                                 "transformer '" + cfg.name + "': head parameters (vocab_size x hidden_size)");
}

std::int64_t parameter_count(const TransformerConfig& cfg) {
  return checked_sum_of_products(
      {{embedding_parameter_count(cfg)}, {blocks_parameters_with(cfg, cfg.num_moe_experts)}, {head_parameter_count(cfg)}},
      "transformer '" + cfg.name + "': parameters (num_layers x parameters per block)");
}

std::int64_t flops_parameter_count(const TransformerConfig& cfg) {
  I64 p = active_parameter_count(cfg);
  if (cfg.position == PositionEmbeddingType::learned)
    p -= cfg.max_positions() * cfg.hidden_size;
  if (!cfg.tied_embeddings) p -= cfg.vocab_size * cfg.hidden_size;
  return p;
}

std::int64_t gemm_parameter_count(const TransformerConfig& cfg) {
  const I64 h = cfg.hidden_size, m = mlp_mult(cfg);
  const I64 q = qkv_width(cfg), ad = cfg.num_attention_heads * cfg.head_dim();
  const I64 attention = h * q + ad * h, dense_mlp = cfg.ffn_size() * h * (m + 1);
  if (!cfg.moe()) return cfg.num_layers * (attention + dense_mlp) + cfg.vocab_size * h;
  const I64 dense = std::min(cfg.moe_first_dense_layers, cfg.num_layers);
  const I64 moe_mlp = h * cfg.num_moe_experts + cfg.moe_router_topk * cfg.expert_ffn_size() * h * (m + 1) +
                      cfg.moe_shared_expert_intermediate_size * h * (m + 1);
  return dense * (attention + dense_mlp) + (cfg.num_layers - dense) * (attention + moe_mlp) + cfg.vocab_size * h;
}

// The share of a token's k expert assignments its experts compute: all of them, but under a
// capacity factor below 1, where (balanced) routing fills each expert's buffer of c x the
// balanced share and drops the rest (no FLOPs spent on them: counting them would put MFU past 100%).
namespace {
double routed_assignments_computed(const TransformerConfig& cfg) {
  const double c = cfg.moe_expert_capacity_factor;
  return c > 0 && c < 1 ? c : 1.0;
}
}  // namespace

Flops model_flops_per_token(const TransformerConfig& cfg, std::int64_t seq_len) {
  const double attn = 6.0 * d(cfg.num_layers) * d(seq_len) *
                      d(cfg.num_attention_heads * cfg.head_dim());
  double dropped = 0;
  if (cfg.moe()) {
    const double moe_layers = d(cfg.num_layers - std::min(cfg.moe_first_dense_layers, cfg.num_layers));
    const double routed = d(cfg.moe_router_topk) * d(cfg.expert_ffn_size()) * d(cfg.hidden_size) * d(mlp_mult(cfg) + 1);
    dropped = (1.0 - routed_assignments_computed(cfg)) * moe_layers * routed;
  }
  return 6.0 * (d(flops_parameter_count(cfg)) - dropped) + attn;
}

Flops megatron_flops_per_iteration(const TransformerConfig& cfg, std::int64_t global_batch,
                                   std::int64_t seq_len, bool causal) {
  const double B = d(global_batch), s = d(seq_len), l = d(cfg.num_layers), h = d(cfg.hidden_size),
               V = d(cfg.vocab_size);
  const double attn = causal ? s / (12.0 * h) : s / (6.0 * h);
  return 96.0 * B * s * l * h * h * (1.0 + attn + V / (16.0 * l * h));
}

Bytes gpt_layer_activation_bytes(std::int64_t b, std::int64_t s, std::int64_t h, std::int64_t a, int tp, bool sp,
                                 Recompute recompute) {
  const double sbh = d(s) * d(b) * d(h), t = tp, attn = 5.0 * d(a) * d(s) / d(h);
  if (recompute == Recompute::full) return 2.0 * sbh / (sp ? t : 1.0);
  const double core = recompute == Recompute::selective ? 0.0 : attn;
  if (sp || tp == 1) return sbh / t * (34.0 + core);
  return sbh * (10.0 + 24.0 / t + core / t);
}

Bytes activation_bytes_per_layer(const TransformerConfig& cfg, std::int64_t b, std::int64_t s,
                                 int tp, bool sequence_parallel, Recompute recompute,
                                 DType dtype, Fp8Recipe fp8) {
  const double e = dtype_bytes(dtype), t = tp;
  // The norm outputs feeding FP8 linears are kept in FP8 (norm_out_dtype); a router's is not.
  const double norm_out = fp8 == Fp8Recipe::none ? e : 1.0;
  const bool sp = sequence_parallel && tp > 1;
  const double h = d(cfg.hidden_size), a = d(cfg.num_attention_heads),
               g = d(cfg.query_groups()), hd = d(cfg.head_dim()), f = d(cfg.ffn_size()),
               m = d(mlp_mult(cfg));
  const double full = d(b) * d(s);              // tokens
  const double local = sp ? full / t : full;    // tokens this rank holds in norms / dropout
  if (recompute == Recompute::full) return e * local * h;
  const double mask = cfg.hidden_dropout > 0 ? 1.0 : 0.0;
  double bytes = 0;
  bytes += e * local * h;                    // layer input (attention norm input)
  bytes += norm_out * local * h;             // attention norm output = QKV input
  bytes += e * full * (a + 2 * g) * hd / t;  // Q, K, V
  if (recompute != Recompute::selective) {
    const double rows = d(b) * a / t * d(s);  // softmax rows
    if (cfg.use_flash_attn) bytes += 4.0 * rows;  // fp32 logsumexp
    else bytes += rows * d(s) * (e + (cfg.attention_dropout > 0 ? 1.0 + e : 0.0));
  }
  bytes += e * full * a * hd / t;    // attention output = projection input
  bytes += mask * local * h;         // dropout mask after the projection
  bytes += e * local * h;            // MLP norm input
  bytes += (cfg.moe() ? e : norm_out) * local * h;  // MLP norm output = fc1 input (the router's with experts)
  bytes += mask * local * h;         // dropout mask after fc2
  if (cfg.moe()) {
    // Every expert's buffer of C places (whichever rank computes it): its input, fc1 output,
    // activation output and output; the routing (gates, expert ids, places, probabilities).
    const double E = d(cfg.num_moe_experts), k = d(cfg.moe_router_topk), fe = d(cfg.expert_ffn_size());
    // (Dropless: at the busiest expert's expected load, as the cost models price it.)
    const double places = E * d(cfg.priced_expert_rows(b * s)), shared = d(cfg.moe_shared_expert_intermediate_size);
    return bytes + e * places * (h + fe * m + fe + h) + full * k * (e + 8.0) + full * E * 4.0 +
           e * full * shared * (m + 1);  // the shared expert's fc1 output and activation
  }
  bytes += e * full * f * m / t;     // fc1 output (activation input)
  bytes += e * full * f / t;         // activation output = fc2 input
  return bytes;
}

// ---------------------------------------------------------------- model

TransformerModel::TransformerModel(TransformerConfig cfg) : cfg_(std::move(cfg)) { validate(cfg_); }

ModelDescription TransformerModel::describe() const {
  ModelDescription desc;
  desc.name = cfg_.name;
  desc.parameter_count = parameter_count(cfg_);
  desc.model_flops_per_token = model_flops_per_token(cfg_, cfg_.seq_length);
  return desc;
}

std::vector<std::unique_ptr<Layer>> TransformerModel::build_layers(
    const BatchShape& batch, const ParallelContext& ctx) const {
  check_shardable(cfg_, batch, ctx);
  auto word = std::make_shared<SharedTable>();
  auto output = cfg_.tied_embeddings ? word : std::make_shared<SharedTable>();
  std::vector<std::unique_ptr<Layer>> layers;
  layers.reserve(static_cast<std::size_t>(cfg_.num_layers) + 2);
  layers.push_back(std::make_unique<EmbeddingLayer>(cfg_, batch, ctx, word));
  for (I64 i = 0; i < cfg_.num_layers; ++i)
    layers.push_back(std::make_unique<TransformerBlock>(cfg_, static_cast<int>(i), batch, ctx));
  layers.push_back(std::make_unique<LMHead>(cfg_, batch, ctx, output));
  return layers;
}

Tensor TransformerModel::make_input(Runtime& rt, const BatchShape& batch, int micro_batch,
                                    const ParallelContext& ctx) const {
  return sequence_data(rt, "mb" + std::to_string(micro_batch) + ".tokens", batch, ctx);
}

}  // namespace tandem
