// Op builders: the one place where a kernel's cost (FLOPs and bytes moved) is derived from its
// shapes. Models and strategies issue every op through these; the simulator only reads
// op.flops / op.bytes, and the real backends only read the kind, args and tensors.
//
// Every builder takes the Runtime, a Phase, a label (stable across backends; callers make it
// unique within an iteration, e.g. "mb0.layer3.attn.qkv.fwd"), the tensors, the kernel
// arguments and an Issue (stream + dependencies), fills a ComputeOp / CommOp and returns the
// Handle from rt.compute / rt.communicate.
//
// Cost conventions (a multiply-add is 2 FLOPs; bytes are bytes read + written in device memory):
//   gemm       flops = 2·m·n·k·batch; bytes = (m·k·|A| + k·n·|B| + m·n·|C|·(2 if accumulate))·batch
//              where |X| is the byte size of that operand's dtype.
//   attention  forward flops = 4·b·heads·s²·head_dim (QKᵀ and PV), halved when causal (model
//              FLOPs: the masked half is not counted even for an unfused kernel); backward =
//              2 × forward. Bytes: Q, O (heads) and K, V (kv_heads) once each, plus the fp32
//              logsumexp [b,heads,s] when flash; an unfused kernel also writes and re-reads the
//              heads·s² score and probability matrices (4 passes forward, 6 backward).
//   norm       layer norm 8 FLOPs/element forward, rms norm 4; backward 2 × forward. Bytes: read
//              x (+dy), write y (dx), the weight (and bias), fp32 row statistics.
//   elementwise per output element (see elementwise_flops_per_element); bytes = read + write.
//              dropout masks are 1 byte per element.
//   embedding  forward 0 FLOPs, bytes = token ids + gathered rows read + output written;
//              backward scatter-add: tokens·hidden FLOPs, reads the gradient and reads/writes
//              the touched table rows.
//   loss       softmax cross-entropy: 5 FLOPs per logit forward (max, sub, exp, sum, log/pick),
//              3 backward (softmax − one-hot, scale). Forward reads the logits and writes the
//              fp32 softmax kept for backward (Megatron keeps it in fp32); backward reads it and
//              writes the logit gradient.
//   optimizer  AdamW, 12 FLOPs per element; bytes = read grad + read/write fp32 master, m, v
//              (24) + write the low-precision parameter copy when the parameter is not fp32.
//   memcpy     0 FLOPs, bytes = 2·numel·dtype.
//   comm       CommOp.bytes follows nccl-tests: the whole buffer for all-reduce, the
//              concatenated (full) size for reduce-scatter / all-gather / all-to-all, the
//              message for send / recv / broadcast.
//
// Tensor conventions the real backends may rely on:
//   gemm       inputs {A, B}, outputs {C}; C[m,n] (+)= op(A)·op(B) with row-major storage.
//              Linear layers store weights [in, out], so forward is Y = X·W (no transpose),
//              input-grad dX = dY·Wᵀ (trans_b), weight-grad dW += Xᵀ·dY (trans_a, accumulate).
//   attention  forward inputs {qkv} packed [b, s, (heads + 2·kv_heads)·head_dim] as Q | K | V;
//              outputs {context [b, s, heads·head_dim], then either logsumexp [b, heads, s] fp32
//              (flash) or probs [b, heads, s, s] (+ dropout mask and dropped probs when attention
//              dropout is on)}. backward inputs {qkv, saved forward outputs…, d_context},
//              outputs {d_qkv}.
#pragma once

#include <string>
#include <vector>

#include "strategies/op.hpp"
#include "strategies/runtime.hpp"

namespace tandem::ops {

struct Cost {
  Flops flops = 0;
  Bytes bytes = 0;
};

// ---- pure cost formulas (also used by analytic model figures and tests) ----
Cost gemm_cost(const GemmArgs& args, DType a, DType b, DType c);
inline Cost gemm_cost(const GemmArgs& args, DType dtype) { return gemm_cost(args, dtype, dtype, dtype); }
Cost attention_cost(const AttentionArgs& args, DType dtype);
Cost norm_cost(const NormArgs& args, DType dtype);
Flops elementwise_flops_per_element(ElementwiseFn fn, bool backward);
Cost elementwise_cost(const ElementwiseArgs& args, DType dtype, DType out_dtype);
inline Cost elementwise_cost(const ElementwiseArgs& args, DType dtype) {
  return elementwise_cost(args, dtype, dtype);
}
Cost embedding_cost(const EmbeddingArgs& args, DType dtype);
Cost loss_cost(const LossArgs& args, DType logits_dtype);
Cost adamw_cost(const OptimizerArgs& args, DType param_dtype, DType grad_dtype);
Cost memcpy_cost(const MemcpyArgs& args, DType dtype);
// Mixture-of-experts gathers and scatters (MoeArgs), `dtype` the activations': routing ~6 FLOPs
// per logit (softmax, top-k, gates) and reads/writes its [T,E] and [T,k] tensors (indices int32,
// probabilities fp32); dispatch and combine move each picked token's row once (combine's
// weighted sum 2 FLOPs per element, its backward 4) and fill the [E,C,h] buffer; regroup copies
// the buffer.
Cost moe_cost(const MoeArgs& args, DType dtype);
// FLOPs of any kernel from its arguments alone (dtype-independent).
Flops flops_of(const KernelArgs& args);

// ---- compute builders ----
// gemm: compute_dtype = A's dtype (the activation dtype).
Handle gemm(Runtime& rt, Phase phase, std::string label, const Tensor& a, const Tensor& b,
            const Tensor& c, const GemmArgs& args, const Issue& issue = {});
// attention (args.backward selects the kernel); dtype = inputs[0]'s (the packed qkv).
Handle attention(Runtime& rt, Phase phase, std::string label, std::vector<Tensor> inputs,
                 std::vector<Tensor> outputs, const AttentionArgs& args, const Issue& issue = {});
// norm: forward inputs {x, weight[, bias]} outputs {y}; backward inputs {x, dy, weight}
// outputs {dx, dweight[, dbias]} (weight grads accumulated).
Handle norm(Runtime& rt, Phase phase, std::string label, std::vector<Tensor> inputs,
            std::vector<Tensor> outputs, const NormArgs& args, const Issue& issue = {});
// elementwise: dtype = inputs[0]'s, output dtype = outputs[0]'s (they differ for cast).
Handle elementwise(Runtime& rt, Phase phase, std::string label, std::vector<Tensor> inputs,
                   std::vector<Tensor> outputs, const ElementwiseArgs& args,
                   const Issue& issue = {});
// embedding: forward inputs {table, ids} outputs {rows}; backward inputs {d_rows, ids}
// outputs {d_table} (scatter-add). A missing ids tensor means positions 0..s-1 per sequence.
Handle embedding(Runtime& rt, Phase phase, std::string label, std::vector<Tensor> inputs,
                 std::vector<Tensor> outputs, const EmbeddingArgs& args, const Issue& issue = {});
// cross-entropy: forward inputs {logits, labels} outputs {softmax (fp32), per-token stats};
// backward inputs {softmax, labels} outputs {d_logits}. dtype = inputs[0]'s.
Handle cross_entropy(Runtime& rt, Phase phase, std::string label, std::vector<Tensor> inputs,
                     std::vector<Tensor> outputs, const LossArgs& args, const Issue& issue = {});
// AdamW on a flat shard: states = {master (fp32; omit when the parameter is fp32), m, v}.
Handle adamw(Runtime& rt, std::string label, const Tensor& param, const Tensor& grad,
             std::vector<Tensor> states, const OptimizerArgs& args, const Issue& issue = {});
Handle memcpy(Runtime& rt, Phase phase, std::string label, const Tensor& src, const Tensor& dst,
              const Issue& issue = {});
// moe: tensors as MoeArgs lists them for its step; dtype = the activations' (inputs[0]'s, or for
// a route backward the gates').
Handle moe(Runtime& rt, Phase phase, std::string label, std::vector<Tensor> inputs, std::vector<Tensor> outputs,
           const MoeArgs& args, const Issue& issue = {});
// MemcpyArgs' strided column copy (rows, cols, src_ld, src_col, dst_ld, dst_col set; numel filled).
Handle copy_columns(Runtime& rt, Phase phase, std::string label, const Tensor& src, const Tensor& dst,
                    MemcpyArgs args, const Issue& issue = {});
// Elements [src_offset, src_offset + numel) of `src` into [dst_offset, ...) of `dst`, one side in
// the host's memory (ZeRO-Offload): bytes = numel x src's dtype over the device's host link.
Handle copy_host(Runtime& rt, Phase phase, std::string label, const Tensor& src, std::int64_t src_offset,
                 const Tensor& dst, std::int64_t dst_offset, std::int64_t numel, HostCopy direction,
                 const Issue& issue = {});

// ---- communication builders (bytes per nccl-tests; see the header comment) ----
// `buffer` is the in-place buffer for all-reduce, the full (concatenated) input for
// reduce-scatter, the full output for all-gather.
Handle all_reduce(Runtime& rt, Phase phase, std::string label, const Tensor& buffer,
                  const Group& group, const Issue& issue = {}, ReduceOp reduce = ReduceOp::sum);
// A bucket of tensors reduced as one flat buffer (DDP / Megatron gradient buckets).
Handle all_reduce(Runtime& rt, Phase phase, std::string label, const std::vector<Tensor>& bucket,
                  const Group& group, const Issue& issue = {}, ReduceOp reduce = ReduceOp::sum);
Handle reduce_scatter(Runtime& rt, Phase phase, std::string label, const Tensor& full_buffer,
                      const Group& group, const Issue& issue = {},
                      ReduceOp reduce = ReduceOp::sum);
Handle reduce_scatter(Runtime& rt, Phase phase, std::string label,
                      const std::vector<Tensor>& bucket, const Group& group,
                      const Issue& issue = {}, ReduceOp reduce = ReduceOp::sum);
Handle all_gather(Runtime& rt, Phase phase, std::string label, const Tensor& full_buffer,
                  const Group& group, const Issue& issue = {});
Handle all_gather(Runtime& rt, Phase phase, std::string label, const std::vector<Tensor>& bucket,
                  const Group& group, const Issue& issue = {});
// Out-of-place forms (CommShards): the reduce-scatter's result lands in `parts`, the
// all-gather's contribution comes from `parts`. Same cost as the in-place forms.
Handle reduce_scatter(Runtime& rt, Phase phase, std::string label,
                      const std::vector<Tensor>& bucket, const Group& group, CommShards parts,
                      const Issue& issue = {}, ReduceOp reduce = ReduceOp::sum);
Handle all_gather(Runtime& rt, Phase phase, std::string label, const std::vector<Tensor>& bucket,
                  const Group& group, CommShards parts, const Issue& issue = {});
Handle broadcast(Runtime& rt, Phase phase, std::string label, const Tensor& buffer,
                 const Group& group, int root_global_rank, const Issue& issue = {});
Handle all_to_all(Runtime& rt, Phase phase, std::string label, const Tensor& buffer,
                  const Group& group, const Issue& issue = {});
Handle send(Runtime& rt, Phase phase, std::string label, const Tensor& buffer, int peer,
            const Issue& issue = {}, int tag = 0);
Handle recv(Runtime& rt, Phase phase, std::string label, const Tensor& buffer, int peer,
            const Issue& issue = {}, int tag = 0);
// The same for elements [offset, offset + numel) of `buffer` (CommOp::part_offset).
Handle send_part(Runtime& rt, Phase phase, std::string label, const Tensor& buffer, std::int64_t offset,
                 std::int64_t numel, int peer, const Issue& issue, int tag);
Handle recv_part(Runtime& rt, Phase phase, std::string label, const Tensor& buffer, std::int64_t offset,
                 std::int64_t numel, int peer, const Issue& issue, int tag);

}  // namespace tandem::ops
