// Executes any compute op (strategies/op.hpp) with the CPU reference kernels: the CPU backend's
// one entry point into kernels/cpu/. It visits op.args, fetches each input/output tensor's
// storage through `data(tensor)` and calls the kernel family of that op kind, following the
// tensor conventions of strategies/ops.hpp (restated in each kernel header).
//
// Storage contract with the backend:
//   * every tensor is stored as fp32, numel() floats, whatever its declared dtype;
//   * an int32 tensor (token ids, labels) holds raw int32 values in that storage: `data()`
//     returns a float* that the dispatcher reinterprets as int32_t* (same 4 bytes per element).
//     A token-id tensor declared with a floating dtype is read as float values instead;
//   * a dropout mask holds one byte per element (1 kept, 0 dropped) in the first bytes of its
//     storage reinterpreted as uint8_t (the models declare masks as numel/2 bf16 elements, so
//     the fp32 storage has room to spare).
// Every tensor must be at least as large as the op's arguments imply; otherwise, and for any
// combination the kernels do not cover, run() throws std::logic_error naming the op label.
//
// Per-op choices the op arguments do not carry (see the kernel headers for the math):
//   dropout      p = options.hidden_dropout for ElementwiseFn::dropout; attention dropout uses
//                options.attention_dropout: always for a flash op (its mask is regenerated in
//                backward from the key), and for an unfused op when its outputs carry the mask
//                and dropped probabilities. Key = dropout_key(options.seed, label stem,
//                options.iteration) (elementwise.hpp): forward, recompute and backward of one op
//                share a mask; each iteration draws a new one. SET THESE FROM THE MODEL CONFIG.
//   scale        an op whose output is smaller than its input is the loss mean: output[0] =
//                mean over args.numel rows of column 0 of inputs[0] (the per-token losses in
//                the cross-entropy stats [tokens, 2]). A same-size scale multiplies by
//                ElementwiseArgs::factor when not 0, else options.scale_factor(op) when given, else by 0 when the label's last
//                component is "zero" (gradient zeroing), else it throws: ElementwiseArgs has
//                no factor.
//   embedding    without an ids tensor the op is a position embedding: token t reads row
//                args.vocab_offset + (t mod seq), seq = the second-to-last dimension of the
//                rows tensor (so a sequence-parallel shard can pass its first position as
//                vocab_offset).
//   loss         backward scales by 1/args.tokens (mean over tokens); stats = {loss_t, lse_t}.
//   add          a smaller second input is broadcast (repeated) over the first.
//   optimizer    inputs {param, grad, [master], m, v}; with OptimizerArgs::offset (ZeRO) the
//                update reads/writes param and grad at [offset, offset + numel) and the states
//                (master, m, v) at [0, numel); a param or grad tensor smaller than offset +
//                numel is the shard itself and is read from its start (ZeRO-2/3 partitions).
//   loss         LossArgs::step selects the vocab-parallel step (op.hpp): shard_max {logits}
//                -> {row max}; shard_sum_exp {logits, labels, global max} -> {sums [t, 2]};
//                shard_finish {logits, labels, global max, sums} -> {softmax, stats}.
//   cast, memcpy plain copies.
#pragma once

#include <cstdint>
#include <functional>

#include "strategies/op.hpp"

namespace tandem::kernels::cpu {

using TensorData = std::function<float*(const Tensor&)>;

struct RouterLoad;  // kernels/cpu/moe.hpp

struct RunOptions {
  std::uint64_t seed = 0;        // dropout seed of the run
  std::int64_t iteration = 0;    // training step: fresh dropout masks every step
  float hidden_dropout = 0.1f;   // TransformerConfig defaults
  float attention_dropout = 0.1f;
  std::function<float(const ComputeOp&)> scale_factor;  // optional, for same-size scale ops
  RouterLoad* router_load = nullptr;  // optional: every forward routing's expert load is added
};

void run(const ComputeOp& op, const TensorData& data, const RunOptions& options);
inline void run(const ComputeOp& op, const TensorData& data) { run(op, data, RunOptions{}); }

}  // namespace tandem::kernels::cpu
