#include "kernels/cpu/dispatch.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "kernels/cpu/adamw.hpp"
#include "kernels/cpu/attention.hpp"
#include "kernels/cpu/compression_dispatch.hpp"
#include "kernels/cpu/cross_entropy.hpp"
#include "kernels/cpu/elementwise.hpp"
#include "kernels/cpu/embedding.hpp"
#include "kernels/cpu/fp8.hpp"
#include "kernels/cpu/gemm.hpp"
#include "kernels/cpu/moe.hpp"
#include "kernels/cpu/norm.hpp"
#include "kernels/op_args.hpp"

namespace tandem::kernels::cpu {
namespace {

using I64 = std::int64_t;

// An op's checked tensors (kernels/op_args.hpp) and the run options.
class OpContext : public OpTensors {
 public:
  OpContext(const ComputeOp& op, const TensorData& data, const RunOptions& options)
      : OpTensors("cpu", op, data), options_(options) {}

  // Token ids / labels: raw int32 in an int32 tensor's storage, float values otherwise.
  const std::int32_t* ids(std::size_t input, I64 count, std::vector<std::int32_t>& scratch) const {
    const Tensor& t = input_tensor(input);
    float* p = in(input, count);
    if (t.dtype == DType::int32) return reinterpret_cast<const std::int32_t*>(p);
    scratch.resize(static_cast<std::size_t>(count));
    for (I64 j = 0; j < count; ++j)
      scratch[static_cast<std::size_t>(j)] = static_cast<std::int32_t>(std::lround(p[j]));
    return scratch.data();
  }

  std::uint64_t dropout_key_of_op() const {
    return dropout_key(options_.seed, dropout_stem(op().label), options_.iteration);
  }
  const RunOptions& options() const { return options_; }

 private:
  const RunOptions& options_;
};

// ---------------------------------------------------------------- per kind

void run_gemm(const OpContext& c, const GemmArgs& a) {
  const float* A = c.in(0, a.batch * a.m * a.k);
  const float* B = c.in(1, a.batch * a.k * a.n);
  float* C = c.out(0, a.batch * a.m * a.n);
  if (a.fp8()) {
    // An FP8 GEMM multiplies its operands as cast to FP8 (kernels/cpu/fp8.hpp), accumulating in fp32.
    std::vector<float> qa(A, A + a.batch * a.m * a.k), qb(B, B + a.batch * a.k * a.n);
    quantize_fp8(qa.data(), static_cast<I64>(qa.size()), a.fp8_a);
    quantize_fp8(qb.data(), static_cast<I64>(qb.size()), a.fp8_b);
    gemm_forward(C, qa.data(), qb.data(), a.m, a.n, a.k, a.trans_a, a.trans_b, a.accumulate, a.batch);
    return;
  }
  gemm_forward(C, A, B, a.m, a.n, a.k, a.trans_a, a.trans_b, a.accumulate, a.batch);
}

void run_attention(const OpContext& c, const AttentionArgs& a) {
  AttentionShape s{a.batch, a.heads, a.kv_heads > 0 ? a.kv_heads : a.heads, a.seq, a.head_dim,
                   a.causal, a.cp_size, a.cp_rank};
  if (s.heads < 1 || s.head_dim < 1 || s.heads % s.kv_heads)
    c.fail("inconsistent attention shape (heads " + std::to_string(s.heads) + ", kv_heads " +
           std::to_string(s.kv_heads) + ", head_dim " + std::to_string(s.head_dim) + ")");
  const bool cp = a.cp_size > 1;  // inputs {qkv, kv, ...}; the backward also writes d_kv
  const I64 qkv_n = s.batch * s.seq * (s.heads + 2 * s.kv_heads) * s.head_dim;
  const I64 kv_n = s.batch * a.kv_seq() * 2 * s.kv_heads * s.head_dim;
  const I64 ctx_n = s.batch * s.seq * s.heads * s.head_dim;
  const I64 rows = s.batch * s.heads * s.seq;
  const I64 scores = rows * a.kv_seq();
  const float* kv = cp ? c.in(1, kv_n) : nullptr;
  AttentionDropout drop;
  drop.key = c.dropout_key_of_op();
  if (!a.backward) {
    const AttentionForwardOutputs o = attention_forward_outputs(c, a.flash, rows, scores);
    if (o.dropout) drop.p = c.options().attention_dropout;
    attention_forward(c.out(0, ctx_n), o.lse, o.probs, o.mask, o.dropped, c.in(0, qkv_n), s, drop, kv);
    return;
  }
  // Backward: outputs {d_qkv[, d_kv]}. The context output is not needed (the softmax backward
  // uses Σ P·dP directly).
  const AttentionSavedInputs saved = attention_saved_inputs(c, a.flash, rows, scores, cp ? 2 : 1);
  if (saved.dropout) drop.p = c.options().attention_dropout;
  attention_backward(c.out(0, qkv_n), c.in(c.inputs() - 1, ctx_n), c.in(0, qkv_n), saved.lse,
                     saved.probs, saved.mask, s, drop, kv, cp ? c.out(1, kv_n) : nullptr);
}

void run_norm(const OpContext& c, const NormArgs& a) {
  const I64 n = a.rows * a.cols;
  const bool layer = a.norm == NormKind::layer_norm;
  if (!a.backward) {
    const float* x = c.in(0, n);
    const float* w = c.in(1, a.cols);
    const float* b = c.inputs() > 2 ? c.in(2, a.cols) : nullptr;
    float* y = c.out(0, n);
    if (layer) layernorm_forward(y, nullptr, nullptr, x, w, b, a.rows, a.cols);
    else rmsnorm_forward(y, nullptr, x, w, b, a.rows, a.cols);
    return;
  }
  const float* x = c.in(0, n);
  const float* dy = c.in(1, n);
  const float* w = c.in(2, a.cols);
  float* dx = c.out(0, n);
  float* dw = c.outputs() > 1 ? c.out(1, a.cols) : nullptr;
  float* db = c.outputs() > 2 ? c.out(2, a.cols) : nullptr;
  if (layer) layernorm_backward(dx, dw, db, dy, x, w, a.rows, a.cols);
  else rmsnorm_backward(dx, dw, db, dy, x, w, a.rows, a.cols);
}

void run_elementwise(const OpContext& c, const ElementwiseArgs& a) {
  const I64 n = a.numel;
  switch (a.fn) {
    case ElementwiseFn::gelu:
      if (!a.backward) gelu_forward(c.out(0, n), c.in(0, n), n);
      else gelu_backward(c.out(0, n), c.in(0, n), c.in(1, n), n);
      return;
    case ElementwiseFn::swiglu: {
      // numel counts the forward output; the row width is the output's (forward) or the
      // output gradient's (backward) last dimension.
      const Tensor& half = a.backward ? c.input_tensor(1) : c.output_tensor(0);
      const I64 cols = half.shape.empty() ? n : half.shape.back();
      if (cols <= 0 || n % cols) c.fail("swiglu numel is not a whole number of rows");
      const I64 rows = n / cols;
      if (!a.backward) swiglu_forward(c.out(0, n), c.in(0, 2 * n), rows, cols);
      else swiglu_backward(c.out(0, 2 * n), c.in(0, 2 * n), c.in(1, n), rows, cols);
      return;
    }
    case ElementwiseFn::add: {
      if (!a.backward) {
        const I64 nb = std::min<I64>(c.input_tensor(1).numel(), n);
        if (nb <= 0 || n % nb) c.fail("add: the second input does not tile the first");
        add_forward(c.out(0, n), c.in(0, n), c.in(1, nb), n, nb);
        return;
      }
      // Backward: inputs {dy}, outputs {da[, db]}; a smaller output receives the broadcast sum.
      const float* dy = c.in(0, n);
      for (std::size_t i = 0; i < c.outputs(); ++i) {
        const I64 nb = std::min<I64>(c.output_tensor(i).numel(), n);
        if (nb <= 0 || n % nb) c.fail("add backward: an output does not tile the gradient");
        add_backward(nullptr, c.out(i, nb), dy, n, nb);
      }
      return;
    }
    case ElementwiseFn::dropout: {
      const float p = c.options().hidden_dropout;
      if (!(p >= 0.0f && p < 1.0f)) c.fail("dropout probability must be in [0, 1)");
      const std::uint64_t key = c.dropout_key_of_op();
      if (!a.backward) {
        std::uint8_t* mask = c.outputs() > 1 ? c.out_mask(1, n) : nullptr;
        dropout_forward(c.out(0, n), mask, c.in(0, n), n, p, key);
      } else if (c.inputs() > 1) {
        dropout_backward(c.out(0, n), c.in(0, n), c.in_mask(1, n), n, p);
      } else {
        dropout_backward_regenerate(c.out(0, n), c.in(0, n), n, p, key);
      }
      return;
    }
    case ElementwiseFn::bias_add: {
      if (!a.backward) {  // inputs {y, bias}, outputs {y} (in place, or a copy first)
        const I64 cols = c.input_tensor(1).numel();
        if (cols <= 0 || n % cols) c.fail("bias_add: numel is not a whole number of rows");
        const float* y_in = c.in(0, n);
        float* y = c.out(0, n);
        if (y != y_in) std::memmove(y, y_in, sizeof(float) * static_cast<std::size_t>(n));
        bias_add_forward(y, c.in(1, cols), n / cols, cols);
      } else {  // inputs {dy}, outputs {dbias} accumulated
        const I64 cols = c.output_tensor(0).numel();
        if (cols <= 0 || n % cols) c.fail("bias_add backward: numel is not a whole number of rows");
        bias_add_backward(c.out(0, cols), c.in(0, n), n / cols, cols);
      }
      return;
    }
    case ElementwiseFn::scale: {
      if (a.backward) c.fail("scale has no backward kernel");
      const Tensor& in = c.input_tensor(0);
      const Tensor& out = c.output_tensor(0);
      if (out.numel() < in.numel()) {  // the loss mean over per-token rows
        if (n <= 0 || in.numel() % n) c.fail("scale (mean): input is not numel rows");
        const I64 stride = in.numel() / n;
        const float* x = c.in(0, n * stride);
        double sum = 0.0;
        for (I64 t = 0; t < n; ++t) sum += x[t * stride];
        c.out(0, 1)[0] = static_cast<float>(sum / static_cast<double>(n));
        return;
      }
      float alpha;
      if (a.factor != 0) alpha = a.factor;
      else if (c.options().scale_factor) alpha = c.options().scale_factor(c.op());
      else if (last_component(c.op().label) == "zero") alpha = 0.0f;
      else c.fail("a same-size scale needs a factor (RunOptions::scale_factor)");
      scale_forward(c.out(0, n), c.in(0, n), n, alpha);
      return;
    }
    case ElementwiseFn::cast:
      cast_forward(c.out(0, n), c.in(0, n), n);
      return;
    case ElementwiseFn::outer_nesterov:
      if (c.inputs() != 3 || c.outputs() != 3) c.fail("outer_nesterov works in place on {average, anchor, momentum}");
      outer_nesterov(c.out(0, n), c.out(1, n), c.out(2, n), n, a.lr, a.momentum);
      return;
  }
  c.fail("unknown element-wise function");
}

void run_embedding(const OpContext& c, const EmbeddingArgs& a) {
  const I64 rows_n = a.tokens * a.hidden;
  const I64 table_n = a.vocab * a.hidden;
  std::vector<std::int32_t> scratch;
  // The sequence length of a position lookup: the second-to-last dimension of the rows tensor.
  auto seq_of = [&](const Tensor& rows) {
    const I64 s = rows.shape.size() >= 3 ? rows.shape[rows.shape.size() - 2] : a.tokens;
    if (s <= 0) c.fail("position embedding: empty sequence");
    return s;
  };
  try {
    if (!a.backward) {
      float* out = c.out(0, rows_n);
      const float* table = c.in(0, table_n);
      if (c.inputs() > 1) {
        const std::int32_t* ids = c.ids(1, a.tokens, scratch);
        embedding_forward(out, table, ids, a.tokens, a.vocab, a.hidden, a.vocab_offset);
      } else {
        position_embedding_forward(out, table, a.tokens, seq_of(c.output_tensor(0)), a.vocab,
                                   a.hidden, a.vocab_offset);
      }
      return;
    }
    const float* d_rows = c.in(0, rows_n);
    float* d_table = c.out(0, table_n);
    if (c.inputs() > 1) {
      const std::int32_t* ids = c.ids(1, a.tokens, scratch);
      embedding_backward(d_table, d_rows, ids, a.tokens, a.vocab, a.hidden, a.vocab_offset);
    } else {
      position_embedding_backward(d_table, d_rows, a.tokens, seq_of(c.input_tensor(0)), a.vocab,
                                  a.hidden, a.vocab_offset);
    }
  } catch (const std::out_of_range& e) {
    c.fail(e.what());
  }
}

void run_loss(const OpContext& c, const LossArgs& a) {
  const I64 n = a.tokens * a.vocab;
  std::vector<std::int32_t> scratch;
  if (!a.backward && a.step == LossStep::shard_max) {  // inputs {logits} outputs {row max}
    softmax_shard_max(c.out(0, a.tokens), c.in(0, n), a.tokens, a.vocab);
    return;
  }
  const std::int32_t* labels = c.ids(1, a.tokens, scratch);
  if (a.backward) {
    const float scale = a.tokens > 0 ? 1.0f / static_cast<float>(a.tokens) : 0.0f;
    cross_entropy_backward(c.out(0, n), c.in(0, n), labels, a.tokens, a.vocab, scale,
                           a.vocab_offset);
    return;
  }
  switch (a.step) {
    case LossStep::full: {
      float* stats = c.outputs() > 1 ? c.out(1, 2 * a.tokens) : nullptr;
      cross_entropy_forward(c.out(0, n), stats, c.in(0, n), labels, a.tokens, a.vocab,
                            a.vocab_offset);
      return;
    }
    case LossStep::shard_sum_exp:  // inputs {logits, labels, global max} outputs {sums}
      softmax_shard_sum_exp(c.out(0, 2 * a.tokens), c.in(0, n), labels, c.in(2, a.tokens),
                            a.tokens, a.vocab, a.vocab_offset);
      return;
    case LossStep::shard_finish: {  // inputs {logits, labels, global max, sums}
      float* stats = c.outputs() > 1 ? c.out(1, 2 * a.tokens) : nullptr;
      cross_entropy_shard_finish(c.out(0, n), stats, c.in(0, n), c.in(2, a.tokens),
                                 c.in(3, 2 * a.tokens), labels, a.tokens, a.vocab);
      return;
    }
    default:
      c.fail("unknown loss step");
  }
}

// OptimizerArgs::offset (ZeRO: the update covers elements [offset, offset + numel) of the
// parameter and gradient, the states hold just those numel elements); 0 where the field is absent.
template <typename Args>
I64 optimizer_offset(const Args& a) {
  if constexpr (requires { a.offset; }) return static_cast<I64>(a.offset);
  else return 0;
}

void run_optimizer(const OpContext& c, const OptimizerArgs& a) {
  // inputs {param, grad, [master], m, v}; outputs are the same tensors (updated in place).
  const bool with_master = c.inputs() == 5;
  if (c.inputs() != 4 && !with_master)
    c.fail("adamw expects inputs {param, grad, [master], m, v}");
  const I64 n = a.numel;
  const I64 offset = optimizer_offset(a);
  if (offset < 0) c.fail("adamw offset must be >= 0");
  // A tensor too small to hold [offset, offset + numel) is this rank's shard itself (ZeRO-2
  // gradient partitions, ZeRO-3 parameter partitions): it is read from its start.
  auto at_offset = [&](std::size_t i) {
    return c.input_tensor(i).numel() >= offset + n ? offset : I64{0};
  };
  const I64 param_at = at_offset(0), grad_at = at_offset(1);
  float* param = c.in(0, param_at + n) + param_at;
  const float* grad = c.in(1, grad_at + n) + grad_at;
  float* master = with_master ? c.in(2, n) : nullptr;
  float* m = c.in(with_master ? 3 : 2, n);
  float* v = c.in(with_master ? 4 : 3, n);
  AdamWConfig cfg{a.lr, a.beta1, a.beta2, a.eps, a.weight_decay, a.grad_scale, a.step};
  if (a.step < 1) c.fail("adamw step is 1-based");
  adamw_update(param, master, m, v, grad, n, cfg);
}

void run_memcpy(const OpContext& c, const MemcpyArgs& a) {
  if (a.rows > 0) {  // columns of row-major matrices
    if (a.src_col + a.cols > a.src_ld || a.dst_col + a.cols > a.dst_ld) c.fail("copied columns past the rows' width");
    const float* src = c.in(0, a.rows * a.src_ld);
    float* dst = c.out(0, a.rows * a.dst_ld);
    for (I64 r = 0; r < a.rows; ++r)
      std::memcpy(dst + r * a.dst_ld + a.dst_col, src + r * a.src_ld + a.src_col, sizeof(float) * static_cast<std::size_t>(a.cols));
    return;
  }
  const float* src = c.in(0, a.numel);
  float* dst = c.out(0, a.numel);
  if (dst != src) std::memmove(dst, src, sizeof(float) * static_cast<std::size_t>(a.numel));
}

// Mixture of experts (MoeArgs): int32 indices are raw in their tensors' storage.
void run_moe(const OpContext& c, const MoeArgs& a) {
  const MoeShape s{a.tokens, a.hidden, a.experts, a.topk, a.capacity};
  const I64 picks = a.tokens * a.topk, buffer = a.experts * a.capacity * a.hidden, rows = a.tokens * a.hidden;
  auto in_ids = [&](std::size_t i) { return reinterpret_cast<const std::int32_t*>(c.in(i, picks)); };
  auto out_ids = [&](std::size_t i) { return reinterpret_cast<std::int32_t*>(c.out(i, picks)); };
  if (a.topk < 1 || a.topk > a.experts) c.fail("moe: topk must be in [1, experts]");
  switch (a.step) {
    case MoeStep::route:
      if (!a.backward) {
        moe_route_forward(c.out(0, picks), out_ids(1), out_ids(2), c.out(3, a.tokens * a.experts),
                          c.in(0, a.tokens * a.experts), s);
        if (c.options().router_load) c.options().router_load->add(out_ids(1), s);
      } else
        moe_route_backward(c.out(0, a.tokens * a.experts), c.in(0, picks), in_ids(1), c.in(2, a.tokens * a.experts),
                           c.in(3, picks), s, a.aux_loss_coeff, c.inputs() > 4 ? c.in(4, a.experts) : nullptr,
                           a.balance_tokens);
      return;
    case MoeStep::dispatch:
      if (!a.backward) moe_dispatch_forward(c.out(0, buffer), c.in(0, rows), in_ids(1), in_ids(2), s);
      else moe_dispatch_backward(c.out(0, rows), c.in(0, buffer), in_ids(1), in_ids(2), s);
      return;
    case MoeStep::combine:
      if (!a.backward)
        moe_combine_forward(c.out(0, rows), c.in(0, buffer), in_ids(1), in_ids(2), c.in(3, picks), s);
      else
        moe_combine_backward(c.out(0, buffer), c.out(1, picks), c.in(0, rows), c.in(1, buffer), in_ids(2), in_ids(3),
                             c.in(4, picks), s);
      return;
    case MoeStep::regroup:
      if (a.ep < 1 || a.experts % a.ep) c.fail("moe regroup: experts do not split over the expert-parallel group");
      moe_regroup(c.out(0, buffer), c.in(0, buffer), a.ep, a.experts / a.ep, a.capacity, a.hidden, a.backward);
      return;
    case MoeStep::count:
      moe_count(c.out(0, a.experts), in_ids(0), s);
      return;
  }
}

}  // namespace

void run(const ComputeOp& op, const TensorData& data, const RunOptions& options) {
  const OpContext c(op, data, options);
  check_args_kind(c);
  std::visit(
      [&](const auto& a) {
        using T = std::decay_t<decltype(a)>;
        if constexpr (std::is_same_v<T, GemmArgs>) run_gemm(c, a);
        else if constexpr (std::is_same_v<T, AttentionArgs>) run_attention(c, a);
        else if constexpr (std::is_same_v<T, NormArgs>) run_norm(c, a);
        else if constexpr (std::is_same_v<T, ElementwiseArgs>) run_elementwise(c, a);
        else if constexpr (std::is_same_v<T, EmbeddingArgs>) run_embedding(c, a);
        else if constexpr (std::is_same_v<T, LossArgs>) run_loss(c, a);
        else if constexpr (std::is_same_v<T, OptimizerArgs>) run_optimizer(c, a);
        else if constexpr (std::is_same_v<T, CodecArgs>) run_codec(c, a);
        else if constexpr (std::is_same_v<T, MoeArgs>) run_moe(c, a);
        else run_memcpy(c, a);
      },
      op.args);
}

}  // namespace tandem::kernels::cpu
