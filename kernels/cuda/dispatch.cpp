#include "kernels/cuda/dispatch.hpp"

#include <string>
#include <string_view>
#include <type_traits>
#include <variant>

#include "kernels/cpu/elementwise.hpp"
#include "kernels/cuda/adamw.cuh"
#include "kernels/cuda/check.hpp"
#include "kernels/cuda/compression_dispatch.hpp"
#include "kernels/cuda/cross_entropy.cuh"
#include "kernels/cuda/elementwise.cuh"
#include "kernels/cuda/embedding.cuh"
#include "kernels/cuda/moe_dispatch.hpp"
#include "kernels/cuda/norm.cuh"
#include "kernels/op_args.hpp"

namespace tandem::kernels::cuda {
namespace {

using I64 = std::int64_t;

// One op being run: its checked tensors (kernels/op_args.hpp), run options and stream.
struct Op : OpTensors {
  Op(const ComputeOp& op, const TensorData& data, const RunOptions& options, const StreamContext& ctx)
      : OpTensors("cuda", op, data), options(options), ctx(ctx) {}

  const RunOptions& options;
  const StreamContext& ctx;

  // Token ids: raw int32 storage, or float values converted into the workspace.
  const std::int32_t* ids(std::size_t input, I64 count) const {
    const Tensor& t = input_tensor(input);
    float* p = in(input, count);
    if (t.dtype == DType::int32) return reinterpret_cast<const std::int32_t*>(p);
    auto* converted = static_cast<std::int32_t*>(ctx.workspace(sizeof(std::int32_t) * static_cast<std::size_t>(count)));
    float_to_ids(converted, p, count, ctx.stream);
    return converted;
  }
  std::uint64_t dropout_key() const {
    return kernels::cpu::dropout_key(options.seed, kernels::cpu::dropout_stem(op().label), options.iteration);
  }
  cudaStream_t stream() const { return ctx.stream; }
};

void gemm(const Op& c, const GemmArgs& a) {
  // cuBLASLt's FP8 GEMMs need FP8 buffers and scale tensors this backend does not keep yet.
  if (a.fp8()) c.fail("FP8 GEMMs (training.fp8) are simulated and emulated on the CPU backend, not yet run on CUDA");
  c.ctx.blas->gemm_dense(c.out(0, a.batch * a.m * a.n), c.in(0, a.batch * a.m * a.k), c.in(1, a.batch * a.k * a.n),
                         a.m, a.n, a.k, a.trans_a, a.trans_b, a.accumulate, a.batch, c.stream());
}

void attention(const Op& c, const AttentionArgs& a) {
  const AttentionShape s{a.batch, a.heads, a.kv_heads > 0 ? a.kv_heads : a.heads, a.seq, a.head_dim, a.causal,
                         a.cp_size, a.cp_rank};
  if (s.heads < 1 || s.head_dim < 1 || s.heads % s.kv_heads) c.fail("inconsistent attention shape");
  const bool cp = a.cp_size > 1;  // inputs {qkv, kv, ...}; the backward also writes d_kv
  const I64 qkv_n = s.batch * s.seq * (s.heads + 2 * s.kv_heads) * s.head_dim;
  const I64 kv_n = s.batch * a.kv_seq() * 2 * s.kv_heads * s.head_dim;
  const I64 ctx_n = s.batch * s.seq * s.heads * s.head_dim;
  const I64 rows = s.batch * s.heads * s.seq, scores = rows * a.kv_seq();
  const float* kv = cp ? c.in(1, kv_n) : nullptr;
  AttentionDropout drop{0.0f, c.dropout_key()};
  Blas& blas = *c.ctx.blas;
  if (!a.backward) {
    const AttentionForwardOutputs o = attention_forward_outputs(c, a.flash, rows, scores);
    if (o.dropout) drop.p = c.options.attention_dropout;
    attention_forward(blas, c.out(0, ctx_n), o.lse, o.probs, o.mask, o.dropped, c.in(0, qkv_n), s, drop,
                      c.ctx.workspace, c.stream(), kv);
    return;
  }
  const AttentionSavedInputs saved = attention_saved_inputs(c, a.flash, rows, scores, cp ? 2 : 1);
  if (saved.dropout) drop.p = c.options.attention_dropout;
  attention_backward(blas, c.out(0, qkv_n), c.in(c.inputs() - 1, ctx_n), c.in(0, qkv_n), saved.lse, saved.probs,
                     saved.mask, s, drop, c.ctx.workspace, c.stream(), kv, cp ? c.out(1, kv_n) : nullptr);
}

void norm(const Op& c, const NormArgs& a) {
  const I64 n = a.rows * a.cols;
  const bool centered = a.norm == NormKind::layer_norm;
  if (!a.backward) {
    norm_forward(centered, c.out(0, n), c.in(0, n), c.in(1, a.cols), c.inputs() > 2 ? c.in(2, a.cols) : nullptr,
                 a.rows, a.cols, c.stream());
    return;
  }
  norm_backward(centered, c.out(0, n), c.outputs() > 1 ? c.out(1, a.cols) : nullptr,
                c.outputs() > 2 ? c.out(2, a.cols) : nullptr, c.in(1, n), c.in(0, n), c.in(2, a.cols), a.rows, a.cols,
                c.stream());
}

void copy(float* dst, const float* src, I64 n, cudaStream_t stream) {
  if (dst != src && n > 0)
    CUDA_CHECK(cudaMemcpyAsync(dst, src, sizeof(float) * static_cast<std::size_t>(n), cudaMemcpyDeviceToDevice, stream));
}

void elementwise(const Op& c, const ElementwiseArgs& a) {
  const I64 n = a.numel;
  switch (a.fn) {
    case ElementwiseFn::gelu:
      if (!a.backward) gelu_forward(c.out(0, n), c.in(0, n), n, c.stream());
      else gelu_backward(c.out(0, n), c.in(0, n), c.in(1, n), n, c.stream());
      return;
    case ElementwiseFn::swiglu: {
      const Tensor& half = a.backward ? c.input_tensor(1) : c.output_tensor(0);
      const I64 cols = half.shape.empty() ? n : half.shape.back();
      if (cols <= 0 || n % cols) c.fail("swiglu numel is not a whole number of rows");
      if (!a.backward) swiglu_forward(c.out(0, n), c.in(0, 2 * n), n / cols, cols, c.stream());
      else swiglu_backward(c.out(0, 2 * n), c.in(0, 2 * n), c.in(1, n), n / cols, cols, c.stream());
      return;
    }
    case ElementwiseFn::add: {
      if (!a.backward) {
        const I64 nb = std::min<I64>(c.input_tensor(1).numel(), n);
        if (nb <= 0 || n % nb) c.fail("add: the second input does not tile the first");
        add_forward(c.out(0, n), c.in(0, n), c.in(1, nb), n, nb, c.stream());
        return;
      }
      const float* dy = c.in(0, n);
      for (std::size_t i = 0; i < c.outputs(); ++i) {
        const I64 nb = std::min<I64>(c.output_tensor(i).numel(), n);
        if (nb <= 0 || n % nb) c.fail("add backward: an output does not tile the gradient");
        add_backward_broadcast(c.out(i, nb), dy, n, nb, c.stream());
      }
      return;
    }
    case ElementwiseFn::dropout: {
      const float p = c.options.hidden_dropout;
      if (!(p >= 0.0f && p < 1.0f)) c.fail("dropout probability must be in [0, 1)");
      if (!a.backward)
        dropout_forward(c.out(0, n), c.outputs() > 1 ? c.out_mask(1, n) : nullptr, c.in(0, n), n, p, c.dropout_key(),
                        c.stream());
      else if (c.inputs() > 1) dropout_backward(c.out(0, n), c.in(0, n), c.in_mask(1, n), n, p, c.stream());
      else dropout_backward_regenerate(c.out(0, n), c.in(0, n), n, p, c.dropout_key(), c.stream());
      return;
    }
    case ElementwiseFn::bias_add: {
      if (!a.backward) {
        const I64 cols = c.input_tensor(1).numel();
        if (cols <= 0 || n % cols) c.fail("bias_add: numel is not a whole number of rows");
        float* y = c.out(0, n);
        copy(y, c.in(0, n), n, c.stream());
        bias_add_forward(y, c.in(1, cols), n / cols, cols, c.stream());
      } else {
        const I64 cols = c.output_tensor(0).numel();
        if (cols <= 0 || n % cols) c.fail("bias_add backward: numel is not a whole number of rows");
        bias_add_backward(c.out(0, cols), c.in(0, n), n / cols, cols, c.stream());
      }
      return;
    }
    case ElementwiseFn::scale: {
      if (a.backward) c.fail("scale has no backward kernel");
      const I64 in_n = c.input_tensor(0).numel();
      if (c.output_tensor(0).numel() < in_n) {  // the loss mean over per-token rows
        if (n <= 0 || in_n % n) c.fail("scale (mean): input is not numel rows");
        const I64 stride = in_n / n;
        strided_mean(c.out(0, 1), c.in(0, n * stride), n, stride, c.stream());
        return;
      }
      float alpha;
      if (a.factor != 0) alpha = a.factor;
      else if (c.options.scale_factor) alpha = c.options.scale_factor(c.op());
      else if (last_component(c.op().label) == "zero") alpha = 0.0f;
      else c.fail("a same-size scale needs a factor (RunOptions::scale_factor)");
      scale_forward(c.out(0, n), c.in(0, n), n, alpha, c.stream());
      return;
    }
    case ElementwiseFn::cast:
      copy(c.out(0, n), c.in(0, n), n, c.stream());
      return;
    case ElementwiseFn::outer_nesterov:
      c.fail("DiLoCo's outer optimizer (strategy.outer_lr / outer_momentum) runs on the CPU backend and in the "
             "simulator, not yet on CUDA");
  }
  c.fail("unknown element-wise function");
}

void embedding(const Op& c, const EmbeddingArgs& a) {
  const I64 rows_n = a.tokens * a.hidden, table_n = a.vocab * a.hidden;
  // Position lookups: seq = the rows tensor's second-to-last dimension; bounds checked here.
  auto seq_of = [&](const Tensor& rows) {
    const I64 s = rows.shape.size() >= 3 ? rows.shape[rows.shape.size() - 2] : a.tokens;
    if (s <= 0) c.fail("position embedding: empty sequence");
    const I64 last = a.vocab_offset + std::min(s, a.tokens) - 1;
    if (a.tokens > 0 && (a.vocab_offset < 0 || last >= a.vocab))
      c.fail("position embedding: position " + std::to_string(a.vocab_offset < 0 ? a.vocab_offset : last) +
             " outside the table of " + std::to_string(a.vocab) + " rows");
    return s;
  };
  if (!a.backward) {
    float* out = c.out(0, rows_n);
    const float* table = c.in(0, table_n);
    if (c.inputs() > 1)
      embedding_forward(out, table, c.ids(1, a.tokens), a.tokens, a.vocab, a.hidden, a.vocab_offset, c.stream());
    else
      position_embedding_forward(out, table, a.tokens, seq_of(c.output_tensor(0)), a.hidden, a.vocab_offset,
                                 c.stream());
    return;
  }
  const float* d_rows = c.in(0, rows_n);
  float* d_table = c.out(0, table_n);
  if (c.inputs() > 1)
    embedding_backward(d_table, d_rows, c.ids(1, a.tokens), a.tokens, a.vocab, a.hidden, a.vocab_offset, c.stream());
  else
    position_embedding_backward(d_table, d_rows, a.tokens, seq_of(c.input_tensor(0)), a.hidden, a.vocab_offset,
                                c.stream());
}

// LossArgs::step: the vocab-parallel steps, with the tensors of kernels/cpu/dispatch.hpp.
void loss(const Op& c, const LossArgs& a) {
  const I64 n = a.tokens * a.vocab;
  if (!a.backward && a.step == LossStep::shard_max) {  // inputs {logits} outputs {row max}
    softmax_shard_max(c.out(0, a.tokens), c.in(0, n), a.tokens, a.vocab, c.stream());
    return;
  }
  const std::int32_t* labels = c.ids(1, a.tokens);
  if (a.backward) {
    const float scale = a.tokens > 0 ? 1.0f / static_cast<float>(a.tokens) : 0.0f;
    cross_entropy_backward(c.out(0, n), c.in(0, n), labels, a.tokens, a.vocab, scale, a.vocab_offset, c.stream());
    return;
  }
  float* stats = c.outputs() > 1 ? c.out(1, 2 * a.tokens) : nullptr;
  switch (a.step) {
    case LossStep::full:
      cross_entropy_forward(c.out(0, n), stats, c.in(0, n), labels, a.tokens, a.vocab, a.vocab_offset, c.stream());
      return;
    case LossStep::shard_sum_exp:  // inputs {logits, labels, global max} outputs {sums [t, 2]}
      softmax_shard_sum_exp(c.out(0, 2 * a.tokens), c.in(0, n), labels, c.in(2, a.tokens), a.tokens, a.vocab,
                            a.vocab_offset, c.stream());
      return;
    case LossStep::shard_finish:  // inputs {logits, labels, global max, sums} outputs {softmax[, stats]}
      cross_entropy_shard_finish(c.out(0, n), stats, c.in(0, n), c.in(2, a.tokens), c.in(3, 2 * a.tokens), labels,
                                 a.tokens, a.vocab, c.stream());
      return;
    default:
      c.fail("unknown loss step");
  }
}

void optimizer(const Op& c, const OptimizerArgs& a) {
  const bool with_master = c.inputs() == 5;
  if (c.inputs() != 4 && !with_master) c.fail("adamw expects inputs {param, grad, [master], m, v}");
  if (a.offset < 0) c.fail("adamw offset must be >= 0");
  if (a.step < 1) c.fail("adamw step is 1-based");
  const I64 n = a.numel, off = a.offset;
  // A param or grad tensor too small to hold [offset, offset + numel) is this rank's shard
  // itself (ZeRO-2 gradient partitions, ZeRO-3 parameter partitions): read from its start.
  auto at_offset = [&](std::size_t i) { return c.input_tensor(i).numel() >= off + n ? off : I64{0}; };
  const I64 param_at = at_offset(0), grad_at = at_offset(1);
  adamw_update(c.in(0, param_at + n) + param_at, with_master ? c.in(2, n) : nullptr, c.in(with_master ? 3 : 2, n),
               c.in(with_master ? 4 : 3, n), c.in(1, grad_at + n) + grad_at, n,
               adamw_step(a.lr, a.beta1, a.beta2, a.eps, a.weight_decay, a.grad_scale, a.step), c.stream());
}

// A memcpy op: contiguous, or MemcpyArgs' columns of row-major matrices (cudaMemcpy2D's shape).
void copy_columns(const Op& c, const MemcpyArgs& a) {
  if (a.rows == 0) return copy(c.out(0, a.numel), c.in(0, a.numel), a.numel, c.stream());
  if (a.src_col + a.cols > a.src_ld || a.dst_col + a.cols > a.dst_ld) c.fail("copied columns past the rows' width");
  const std::size_t f = sizeof(float);
  CUDA_CHECK(cudaMemcpy2DAsync(c.out(0, a.rows * a.dst_ld) + a.dst_col, f * static_cast<std::size_t>(a.dst_ld),
                               c.in(0, a.rows * a.src_ld) + a.src_col, f * static_cast<std::size_t>(a.src_ld),
                               f * static_cast<std::size_t>(a.cols), static_cast<std::size_t>(a.rows),
                               cudaMemcpyDeviceToDevice, c.stream()));
}

}  // namespace

void run(const ComputeOp& op, const TensorData& data, const RunOptions& options, const StreamContext& context) {
  const Op c{op, data, options, context};
  if (!context.blas || !context.workspace) c.fail("no cuBLASLt handle or workspace in the stream context");
  check_args_kind(c);
  std::visit(
      [&](const auto& a) {
        using T = std::decay_t<decltype(a)>;
        if constexpr (std::is_same_v<T, GemmArgs>) gemm(c, a);
        else if constexpr (std::is_same_v<T, AttentionArgs>) attention(c, a);
        else if constexpr (std::is_same_v<T, NormArgs>) norm(c, a);
        else if constexpr (std::is_same_v<T, ElementwiseArgs>) elementwise(c, a);
        else if constexpr (std::is_same_v<T, EmbeddingArgs>) embedding(c, a);
        else if constexpr (std::is_same_v<T, LossArgs>) loss(c, a);
        else if constexpr (std::is_same_v<T, OptimizerArgs>) optimizer(c, a);
        else if constexpr (std::is_same_v<T, CodecArgs>) run_codec(c, a, c.ctx);
        else if constexpr (std::is_same_v<T, MoeArgs>) run_moe(c, a, c.options, c.ctx);
        else copy_columns(c, a);
      },
      op.args);
}

}  // namespace tandem::kernels::cuda
