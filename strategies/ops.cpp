#include "strategies/ops.hpp"

#include <type_traits>
#include <utility>
#include <variant>

#include "strategies/compression/codec_ops.hpp"

namespace tandem::ops {
namespace {

double d(std::int64_t v) { return static_cast<double>(v); }

// The dtype an op runs in: the first tensor that has a shape (an unset tensor says nothing).
DType dtype_of(const std::vector<Tensor>& first, const std::vector<Tensor>& second,
               DType fallback = DType::bf16) {
  for (const auto& t : first)
    if (!t.shape.empty()) return t.dtype;
  for (const auto& t : second)
    if (!t.shape.empty()) return t.dtype;
  return fallback;
}

DType dtype_or(const Tensor& t, DType fallback) { return t.shape.empty() ? fallback : t.dtype; }

Handle issue_compute(Runtime& rt, OpKind kind, Phase phase, std::string label, KernelArgs args,
                     std::vector<Tensor> inputs, std::vector<Tensor> outputs, Cost cost,
                     DType compute_dtype, const Issue& issue) {
  ComputeOp op;
  op.kind = kind;
  op.phase = phase;
  op.label = std::move(label);
  op.args = std::move(args);
  op.inputs = std::move(inputs);
  op.outputs = std::move(outputs);
  op.flops = cost.flops;
  op.bytes = cost.bytes;
  op.compute_dtype = compute_dtype;
  return rt.compute(std::move(op), issue);
}

Bytes bucket_bytes(const std::vector<Tensor>& bucket) {
  Bytes total = 0;
  for (const auto& t : bucket) total += t.bytes();
  return total;
}

Handle issue_comm(Runtime& rt, OpKind kind, Phase phase, std::string label, const Tensor& buffer,
                  std::vector<Tensor> bucket, const Group& group, const Issue& issue,
                  ReduceOp reduce = ReduceOp::sum, int peer = -1, int root = -1, int tag = 0,
                  CommShards shards = {}) {
  CommOp op;
  op.shards = std::move(shards);
  op.kind = kind;
  op.phase = phase;
  op.label = std::move(label);
  op.buffer = buffer;
  op.bytes = bucket.empty() ? buffer.bytes() : bucket_bytes(bucket);
  op.bucket = std::move(bucket);
  op.group = group;
  op.peer = peer;
  op.root = root;
  op.reduce = reduce;
  op.tag = tag;
  op.userbuffers = issue.userbuffers;
  return rt.communicate(std::move(op), issue);
}

}  // namespace

// ---------------------------------------------------------------- cost formulas

Cost gemm_cost(const GemmArgs& a, DType da, DType db, DType dc) {
  Cost c;
  c.flops = 2.0 * d(a.m) * d(a.n) * d(a.k) * d(a.batch);
  const double c_passes = a.accumulate ? 2.0 : 1.0;
  c.bytes = (d(a.m) * d(a.k) * dtype_bytes(da) + d(a.k) * d(a.n) * dtype_bytes(db) +
             d(a.m) * d(a.n) * dtype_bytes(dc) * c_passes) *
            d(a.batch);
  return c;
}

Cost attention_cost(const AttentionArgs& a, DType dtype) {
  const double e = dtype_bytes(dtype);
  const std::int64_t kv = a.kv_heads > 0 ? a.kv_heads : a.heads;
  // Causal: half the scores are visible, also for a context-parallel rank's zigzag chunks
  // (chunks r and 2cp−1−r see (2cp−1)c² + c(c+1) scores together, half of their 2c·2cp·c).
  const double fwd_flops = 4.0 * d(a.batch) * d(a.heads) * d(a.seq) * d(a.kv_seq()) * d(a.head_dim) *
                           (a.causal ? 0.5 : 1.0);
  const double q = d(a.batch) * d(a.seq) * d(a.heads) * d(a.head_dim);    // Q or O elements
  const double k = d(a.batch) * d(a.kv_seq()) * d(kv) * d(a.head_dim);    // K or V elements
  const double rows = d(a.batch) * d(a.heads) * d(a.seq);                 // softmax rows
  const double scores = rows * d(a.kv_seq());                             // heads·s² per sequence
  Cost c;
  if (!a.backward) {
    c.flops = fwd_flops;
    c.bytes = e * (2 * q + 2 * k);  // read Q, K, V; write O
    c.bytes += a.flash ? 4.0 * rows : 4.0 * e * scores;  // logsumexp | S and P written + read
  } else {
    c.flops = 2.0 * fwd_flops;
    c.bytes = e * (3 * q + 2 * k) + e * (q + 2 * k);  // read Q,K,V,O,dO; write dQ,dK,dV
    c.bytes += a.flash ? 3.0 * 4.0 * rows : 6.0 * e * scores;  // lse + D | P, dP, dS passes
  }
  return c;
}

Cost norm_cost(const NormArgs& a, DType dtype) {
  const double e = dtype_bytes(dtype);
  const double n = d(a.rows) * d(a.cols);
  const bool layer = a.norm == NormKind::layer_norm;
  const double per_element = layer ? 8.0 : 4.0;
  const double params = layer ? 2.0 : 1.0;  // weight (+ bias)
  const double stats = layer ? 2.0 : 1.0;   // mean (+) rstd, fp32 per row
  Cost c;
  if (!a.backward) {
    c.flops = per_element * n;
    c.bytes = 2 * e * n + e * params * d(a.cols) + 4.0 * stats * d(a.rows);
  } else {
    c.flops = 2.0 * per_element * n;
    c.bytes = 3 * e * n + 3 * e * params * d(a.cols) + 4.0 * stats * d(a.rows);  // read x, dy; write dx
    if (a.weight_grad_rereads) c.bytes += 2 * e * n;  // x and dy read again for the weight gradients
  }
  return c;
}

Flops elementwise_flops_per_element(ElementwiseFn fn, bool backward) {
  switch (fn) {
    case ElementwiseFn::gelu: return backward ? 13 : 8;  // tanh approximation
    case ElementwiseFn::swiglu: return backward ? 12 : 6;  // silu(gate) · up
    case ElementwiseFn::add: return backward ? 0 : 1;
    case ElementwiseFn::dropout: return backward ? 1 : 2;  // rng compare + scale | mask · scale
    case ElementwiseFn::bias_add: return 1;                 // backward: column-sum reduction
    case ElementwiseFn::scale: return 1;
    case ElementwiseFn::cast: return 0;
    case ElementwiseFn::outer_nesterov: return 6;
  }
  return 1;
}

Cost elementwise_cost(const ElementwiseArgs& a, DType dtype, DType out_dtype) {
  const double e = dtype_bytes(dtype);
  const double o = dtype_bytes(out_dtype);
  const double n = d(a.numel);
  Cost c;
  c.flops = elementwise_flops_per_element(a.fn, a.backward) * n;
  switch (a.fn) {
    case ElementwiseFn::gelu:
      c.bytes = a.backward ? 2 * e * n + o * n : e * n + o * n;
      break;
    case ElementwiseFn::swiglu:  // numel: the forward output (half of the gate|up input)
      c.bytes = a.backward ? 3 * e * n + 2 * o * n : 2 * e * n + o * n;
      break;
    case ElementwiseFn::add:
      c.bytes = a.backward ? e * n + o * n : 2 * e * n + o * n;
      break;
    case ElementwiseFn::dropout:  // 1-byte mask
      c.bytes = a.backward ? e * n + n + o * n : e * n + o * n + n;
      break;
    case ElementwiseFn::bias_add:
      c.bytes = a.backward ? e * n : e * n + o * n;
      break;
    case ElementwiseFn::scale:
    case ElementwiseFn::cast:
      c.bytes = e * n + o * n;
      break;
    case ElementwiseFn::outer_nesterov:  // fp32 average, anchor and momentum read and written
      c.bytes = 6 * 4.0 * n;
      break;
  }
  return c;
}

Cost embedding_cost(const EmbeddingArgs& a, DType dtype) {
  const double e = dtype_bytes(dtype);
  const double rows = d(a.tokens) * d(a.hidden);
  Cost c;
  if (!a.backward) {
    c.flops = 0;
    c.bytes = 4.0 * d(a.tokens) + 2 * e * rows;  // ids, gathered rows, output
  } else {
    c.flops = rows;                              // scatter-add
    c.bytes = 4.0 * d(a.tokens) + 3 * e * rows;  // ids, gradient, table rows read + written
  }
  return c;
}

Cost loss_cost(const LossArgs& a, DType logits_dtype) {
  const double e = dtype_bytes(logits_dtype);
  const double logits = d(a.tokens) * d(a.vocab);
  const double tokens = d(a.tokens);
  Cost c;
  if (a.backward || a.step == LossStep::full) {
    c.flops = (a.backward ? 3.0 : 5.0) * logits;
    c.bytes = e * logits + 4.0 * logits + 4.0 * tokens * (a.backward ? 1.0 : 3.0);
    return c;
  }
  // Vocab-parallel steps: the same 5 FLOPs per logit in all (max 1; subtract, exp, sum 2 on
  // top of the max; normalise 2), each step reading the logits again.
  switch (a.step) {
    case LossStep::shard_max:
      c.flops = logits;
      c.bytes = e * logits + 4.0 * tokens;
      break;
    case LossStep::shard_sum_exp:
      c.flops = 2.0 * logits;
      c.bytes = e * logits + 4.0 * tokens * 3.0;
      break;
    default:  // shard_finish: softmax written, {loss, lse} per token
      c.flops = 2.0 * logits;
      c.bytes = e * logits + 4.0 * logits + 4.0 * tokens * 5.0;
      break;
  }
  return c;
}

Cost adamw_cost(const OptimizerArgs& a, DType param_dtype, DType grad_dtype) {
  const double n = d(a.numel);
  Cost c;
  c.flops = 12.0 * n;
  c.bytes = n * (dtype_bytes(grad_dtype) + 24.0 +
                 (param_dtype == DType::fp32 ? 0.0 : dtype_bytes(param_dtype)));
  return c;
}

Cost memcpy_cost(const MemcpyArgs& a, DType dtype) {
  return Cost{0.0, 2.0 * d(a.numel) * dtype_bytes(dtype)};
}

Cost moe_cost(const MoeArgs& a, DType dtype) {
  const double e = dtype_bytes(dtype), T = d(a.tokens), E = d(a.experts), k = d(a.topk), h = d(a.hidden);
  const double buffer = E * d(a.capacity) * h, picked = T * k * h, indices = 2.0 * T * k * 4.0;
  switch (a.step) {
    case MoeStep::route:
      return a.backward ? Cost{6.0 * T * E, T * k * e + indices / 2 + T * E * 4.0 + T * k * e + T * E * e}
                        : Cost{6.0 * T * E, T * E * e + T * k * e + indices + T * E * 4.0};
    case MoeStep::dispatch:
      return a.backward ? Cost{picked, (picked + T * h) * e + indices} : Cost{0.0, (picked + buffer) * e + indices};
    case MoeStep::combine:
      return a.backward ? Cost{4.0 * picked, (T * h + 2.0 * picked + buffer) * e + indices + 2.0 * T * k * e}
                        : Cost{2.0 * picked, (picked + T * h) * e + indices + T * k * e};
    case MoeStep::regroup: return Cost{0.0, 2.0 * buffer * e};
    case MoeStep::count: return Cost{T * k, indices / 2 + E * 4.0};
  }
  return {};
}

Flops flops_of(const KernelArgs& args) {
  return std::visit(
      [](const auto& a) -> Flops {
        using T = std::decay_t<decltype(a)>;
        if constexpr (std::is_same_v<T, GemmArgs>) return gemm_cost(a, DType::bf16).flops;
        else if constexpr (std::is_same_v<T, AttentionArgs>)
          return attention_cost(a, DType::bf16).flops;
        else if constexpr (std::is_same_v<T, NormArgs>) return norm_cost(a, DType::bf16).flops;
        else if constexpr (std::is_same_v<T, ElementwiseArgs>)
          return elementwise_cost(a, DType::bf16).flops;
        else if constexpr (std::is_same_v<T, EmbeddingArgs>)
          return embedding_cost(a, DType::bf16).flops;
        else if constexpr (std::is_same_v<T, LossArgs>) return loss_cost(a, DType::bf16).flops;
        else if constexpr (std::is_same_v<T, OptimizerArgs>)
          return adamw_cost(a, DType::bf16, DType::bf16).flops;
        else if constexpr (std::is_same_v<T, CodecArgs>) return codec_ops::codec_flops(a);
        else if constexpr (std::is_same_v<T, MoeArgs>) return moe_cost(a, DType::bf16).flops;
        else return memcpy_cost(a, DType::bf16).flops;
      },
      args);
}

// ---------------------------------------------------------------- compute builders

// An op whose cost and compute dtype are those of its first tensor (attention, norm).
template <class Args>
Handle issue_in_one_dtype(Runtime& rt, OpKind kind, Phase phase, std::string label,
                          const Args& args, std::vector<Tensor> inputs,
                          std::vector<Tensor> outputs, Cost (*cost_of)(const Args&, DType),
                          const Issue& issue) {
  const DType dt = dtype_of(inputs, outputs);
  return issue_compute(rt, kind, phase, std::move(label), args, std::move(inputs),
                       std::move(outputs), cost_of(args, dt), dt, issue);
}

Handle gemm(Runtime& rt, Phase phase, std::string label, const Tensor& a, const Tensor& b,
            const Tensor& c, const GemmArgs& args, const Issue& issue) {
  const DType da = dtype_or(a, DType::bf16);
  const DType db = dtype_or(b, da);
  if (args.fp8()) {
    // Transformer Engine's FP8 GEMM: each operand is cast to FP8 first (read at its dtype, written
    // at one byte; counted with the GEMM, per GEMM, although TE may reuse a weight's cast across
    // micro-batches), the tensor cores read one-byte operands and write C at its own dtype.
    Cost cost = gemm_cost(args, DType::fp8, DType::fp8, dtype_or(c, da));
    const double a_elements = static_cast<double>(args.m) * args.k * args.batch;
    const double b_elements = static_cast<double>(args.k) * args.n * args.batch;
    cost.bytes += a_elements * (dtype_bytes(da) + 1.0) + b_elements * (dtype_bytes(db) + 1.0);
    return issue_compute(rt, OpKind::gemm, phase, std::move(label), args, {a, b}, {c}, cost, DType::fp8, issue);
  }
  const Cost cost = gemm_cost(args, da, db, dtype_or(c, da));
  return issue_compute(rt, OpKind::gemm, phase, std::move(label), args, {a, b}, {c}, cost, da,
                       issue);
}

Handle attention(Runtime& rt, Phase phase, std::string label, std::vector<Tensor> inputs,
                 std::vector<Tensor> outputs, const AttentionArgs& args, const Issue& issue) {
  return issue_in_one_dtype(rt, OpKind::attention, phase, std::move(label), args,
                            std::move(inputs), std::move(outputs), attention_cost, issue);
}

Handle norm(Runtime& rt, Phase phase, std::string label, std::vector<Tensor> inputs,
            std::vector<Tensor> outputs, const NormArgs& args, const Issue& issue) {
  return issue_in_one_dtype(rt, OpKind::norm, phase, std::move(label), args, std::move(inputs),
                            std::move(outputs), norm_cost, issue);
}

Handle elementwise(Runtime& rt, Phase phase, std::string label, std::vector<Tensor> inputs,
                   std::vector<Tensor> outputs, const ElementwiseArgs& args, const Issue& issue) {
  const DType in = dtype_of(inputs, outputs);
  const DType out = dtype_of(outputs, inputs);
  const Cost cost = elementwise_cost(args, in, out);
  return issue_compute(rt, OpKind::elementwise, phase, std::move(label), args, std::move(inputs),
                       std::move(outputs), cost, in, issue);
}

Handle embedding(Runtime& rt, Phase phase, std::string label, std::vector<Tensor> inputs,
                 std::vector<Tensor> outputs, const EmbeddingArgs& args, const Issue& issue) {
  // The table's (or, backward, the gradient's) dtype; ids are int32.
  DType dt = DType::bf16;
  for (const auto& t : inputs)
    if (!t.shape.empty() && t.dtype != DType::int32) {
      dt = t.dtype;
      break;
    }
  const Cost cost = embedding_cost(args, dt);
  return issue_compute(rt, OpKind::embedding, phase, std::move(label), args, std::move(inputs),
                       std::move(outputs), cost, dt, issue);
}

Handle cross_entropy(Runtime& rt, Phase phase, std::string label, std::vector<Tensor> inputs,
                     std::vector<Tensor> outputs, const LossArgs& args, const Issue& issue) {
  // Forward reads the logits (inputs[0]); backward writes the logit gradient (outputs[0]).
  const DType dt = args.backward ? dtype_of(outputs, inputs) : dtype_of(inputs, outputs);
  const Cost cost = loss_cost(args, dt);
  return issue_compute(rt, OpKind::loss, phase, std::move(label), args, std::move(inputs),
                       std::move(outputs), cost, DType::fp32, issue);
}

Handle adamw(Runtime& rt, std::string label, const Tensor& param, const Tensor& grad,
             std::vector<Tensor> states, const OptimizerArgs& args, const Issue& issue) {
  const Cost cost = adamw_cost(args, dtype_or(param, DType::bf16), dtype_or(grad, DType::bf16));
  std::vector<Tensor> inputs{param, grad};
  std::vector<Tensor> outputs{param};
  for (const auto& s : states) {
    inputs.push_back(s);
    outputs.push_back(s);
  }
  return issue_compute(rt, OpKind::optimizer, Phase::optimizer, std::move(label), args,
                       std::move(inputs), std::move(outputs), cost, DType::fp32, issue);
}

Handle memcpy(Runtime& rt, Phase phase, std::string label, const Tensor& src, const Tensor& dst,
              const Issue& issue) {
  const MemcpyArgs args{src.numel()};
  const DType dt = dtype_or(src, DType::bf16);
  return issue_compute(rt, OpKind::memcpy, phase, std::move(label), args, {src}, {dst},
                       memcpy_cost(args, dt), dt, issue);
}

Handle moe(Runtime& rt, Phase phase, std::string label, std::vector<Tensor> inputs, std::vector<Tensor> outputs,
           const MoeArgs& args, const Issue& issue) {
  const DType dt = dtype_of(inputs, outputs);
  return issue_compute(rt, OpKind::elementwise, phase, std::move(label), args, std::move(inputs),
                       std::move(outputs), moe_cost(args, dt), dt, issue);
}

Handle copy_columns(Runtime& rt, Phase phase, std::string label, const Tensor& src, const Tensor& dst,
                    MemcpyArgs args, const Issue& issue) {
  args.numel = args.rows * args.cols;
  const DType dt = dtype_or(src, DType::bf16);
  return issue_compute(rt, OpKind::memcpy, phase, std::move(label), args, {src}, {dst}, memcpy_cost(args, dt), dt,
                       issue);
}

Handle copy_host(Runtime& rt, Phase phase, std::string label, const Tensor& src, std::int64_t src_offset,
                 const Tensor& dst, std::int64_t dst_offset, std::int64_t numel, HostCopy direction,
                 const Issue& issue) {
  // One row of the columns form: a range of each side.
  MemcpyArgs args;
  args.rows = 1;
  args.cols = numel;
  args.numel = numel;
  args.src_ld = src.numel();
  args.src_col = src_offset;
  args.dst_ld = dst.numel();
  args.dst_col = dst_offset;
  args.host = direction;
  const DType dt = dtype_or(src, DType::bf16);
  // Read once on one side, written once on the other: the bytes cross the host link once.
  const Cost cost{0.0, static_cast<double>(numel) * dtype_bytes(dt)};
  return issue_compute(rt, OpKind::memcpy, phase, std::move(label), args, {src}, {dst}, cost, dt, issue);
}

// ---------------------------------------------------------------- communication builders

Handle all_reduce(Runtime& rt, Phase phase, std::string label, const Tensor& buffer,
                  const Group& group, const Issue& issue, ReduceOp reduce) {
  return issue_comm(rt, OpKind::all_reduce, phase, std::move(label), buffer, {}, group, issue,
                    reduce);
}
Handle all_reduce(Runtime& rt, Phase phase, std::string label, const std::vector<Tensor>& bucket,
                  const Group& group, const Issue& issue, ReduceOp reduce) {
  return issue_comm(rt, OpKind::all_reduce, phase, std::move(label), Tensor{}, bucket, group,
                    issue, reduce);
}
Handle reduce_scatter(Runtime& rt, Phase phase, std::string label, const Tensor& full_buffer,
                      const Group& group, const Issue& issue, ReduceOp reduce) {
  return issue_comm(rt, OpKind::reduce_scatter, phase, std::move(label), full_buffer, {}, group,
                    issue, reduce);
}
Handle reduce_scatter(Runtime& rt, Phase phase, std::string label,
                      const std::vector<Tensor>& bucket, const Group& group, const Issue& issue,
                      ReduceOp reduce) {
  return issue_comm(rt, OpKind::reduce_scatter, phase, std::move(label), Tensor{}, bucket, group,
                    issue, reduce);
}
Handle all_gather(Runtime& rt, Phase phase, std::string label, const Tensor& full_buffer,
                  const Group& group, const Issue& issue) {
  return issue_comm(rt, OpKind::all_gather, phase, std::move(label), full_buffer, {}, group,
                    issue);
}
Handle all_gather(Runtime& rt, Phase phase, std::string label, const std::vector<Tensor>& bucket,
                  const Group& group, const Issue& issue) {
  return issue_comm(rt, OpKind::all_gather, phase, std::move(label), Tensor{}, bucket, group,
                    issue);
}
Handle reduce_scatter(Runtime& rt, Phase phase, std::string label,
                      const std::vector<Tensor>& bucket, const Group& group, CommShards parts,
                      const Issue& issue, ReduceOp reduce) {
  return issue_comm(rt, OpKind::reduce_scatter, phase, std::move(label), Tensor{}, bucket, group,
                    issue, reduce, -1, -1, 0, std::move(parts));
}
Handle all_gather(Runtime& rt, Phase phase, std::string label, const std::vector<Tensor>& bucket,
                  const Group& group, CommShards parts, const Issue& issue) {
  return issue_comm(rt, OpKind::all_gather, phase, std::move(label), Tensor{}, bucket, group,
                    issue, ReduceOp::sum, -1, -1, 0, std::move(parts));
}
Handle broadcast(Runtime& rt, Phase phase, std::string label, const Tensor& buffer,
                 const Group& group, int root_global_rank, const Issue& issue) {
  return issue_comm(rt, OpKind::broadcast, phase, std::move(label), buffer, {}, group, issue,
                    ReduceOp::sum, -1, root_global_rank);
}
Handle all_to_all(Runtime& rt, Phase phase, std::string label, const Tensor& buffer,
                  const Group& group, const Issue& issue) {
  return issue_comm(rt, OpKind::all_to_all, phase, std::move(label), buffer, {}, group, issue);
}

namespace {
// A point-to-point op on elements [offset, offset + numel) of `buffer` (numel -1: all of it).
Handle issue_point_to_point(Runtime& rt, OpKind kind, Phase phase, std::string label, const Tensor& buffer,
                            std::int64_t offset, std::int64_t numel, int peer, const Issue& issue, int tag) {
  CommOp op;
  op.kind = kind;
  op.phase = phase;
  op.label = std::move(label);
  op.buffer = buffer;
  op.part_offset = offset;
  op.part_numel = numel;
  // A part outside the buffer is the strategy's bug: refused here, whatever the backend.
  op.bytes = static_cast<Bytes>(op.buffer_range().second) * dtype_bytes(buffer.dtype);
  op.peer = peer;
  op.tag = tag;
  return rt.communicate(std::move(op), issue);
}
}  // namespace

Handle send(Runtime& rt, Phase phase, std::string label, const Tensor& buffer, int peer, const Issue& issue, int tag) {
  return issue_point_to_point(rt, OpKind::send, phase, std::move(label), buffer, 0, -1, peer, issue, tag);
}
Handle recv(Runtime& rt, Phase phase, std::string label, const Tensor& buffer, int peer, const Issue& issue, int tag) {
  return issue_point_to_point(rt, OpKind::recv, phase, std::move(label), buffer, 0, -1, peer, issue, tag);
}

Handle send_part(Runtime& rt, Phase phase, std::string label, const Tensor& buffer, std::int64_t offset,
                 std::int64_t numel, int peer, const Issue& issue, int tag) {
  return issue_point_to_point(rt, OpKind::send, phase, std::move(label), buffer, offset, numel, peer, issue, tag);
}
Handle recv_part(Runtime& rt, Phase phase, std::string label, const Tensor& buffer, std::int64_t offset,
                 std::int64_t numel, int peer, const Issue& issue, int tag) {
  return issue_point_to_point(rt, OpKind::recv, phase, std::move(label), buffer, offset, numel, peer, issue, tag);
}

}  // namespace tandem::ops
