// The ops a rank issues through the per-rank interface, at the granularity of real kernels.
// An op carries everything any backend needs: its kind and arguments (for the real backends'
// kernels), its FLOPs and bytes (for the simulator's cost model), and a label that, with the
// rank's op sequence number, gives it the same id in simulation and in reality.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "common/units.hpp"
#include "strategies/compression/codec_args.hpp"
#include "strategies/tensor.hpp"

namespace tandem {

enum class OpKind : std::uint8_t {
  // compute
  gemm,
  attention,
  norm,
  elementwise,
  embedding,
  loss,
  optimizer,
  memcpy,
  // communication
  send,
  recv,
  all_reduce,
  reduce_scatter,
  all_gather,
  broadcast,
  all_to_all,
};
inline constexpr int kOpKindCount = 15;
const char* to_string(OpKind kind);
bool is_communication(OpKind kind);
bool is_collective(OpKind kind);

// Where in the training step an op belongs; reports break time down by phase.
enum class Phase : std::uint8_t { forward, backward, optimizer, other };
const char* to_string(Phase phase);

// ---- kernel arguments (what a real backend needs to run the kernel) ----
// FP8 formats of a GEMM operand (OCP 8-bit floating point): E4M3 (max 448, 3 mantissa bits) for
// weights and activations, E5M2 (max 57344, 2 mantissa bits) for gradients in the "hybrid" recipe.
enum class Fp8Format : std::uint8_t { none, e4m3, e5m2 };
const char* to_string(Fp8Format format);

struct GemmArgs {  // C[m,n] (+)= op(A)[m,k] · op(B)[k,n]
  std::int64_t m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  bool accumulate = false;  // C += instead of C =  (gradient accumulation)
  std::int64_t batch = 1;   // batched GEMM count
  // FP8 GEMM (compute dtype fp8): each operand cast to its format with a per-tensor scale.
  Fp8Format fp8_a = Fp8Format::none, fp8_b = Fp8Format::none;
  bool fp8() const { return fp8_a != Fp8Format::none; }
  // Transformer Engine's communication overlap (Megatron-Core --tp-comm-overlap, with sequence
  // parallelism): this GEMM and the tensor-parallel collective it consumes (the all-gather of its
  // input, issued just before it) or feeds (the reduce-scatter of its output, issued just after)
  // run as a pipeline of `overlap_chunks` pieces, each piece's GEMM overlapping another piece's
  // transfer; `bulk`: it overlaps a collective issued beside it as a whole. While it overlaps, the
  // communication kernels hold `overlap_comm_sms` of the GPU's SMs. The result is the same; a
  // backend that does not chunk runs them one after the other.
  enum class CommOverlap : std::uint8_t { none, consumes_gather, feeds_scatter, bulk };
  CommOverlap comm_overlap = CommOverlap::none;
  int overlap_chunks = 1;
  int overlap_comm_sms = 0;
  // The passes a framework runs around a linear layer's GEMM besides it (TrainingConfig::autocast
  // and ::grad_accumulation); they price the GEMM, the arithmetic is the same:
  //   weight_cast    PyTorch AMP: the forward (and a recomputed forward) casts its fp32 weight
  //                  operand B [k, n] to 16 bits first;
  //   grad_add       the weight gradient C [m, n] leaves in 16 bits and one kernel adds it into the
  //                  fp32 main gradient (Megatron-LM before its gradient-accumulation fusion:
  //                  main_grad.add_(grad));
  //   grad_cast_add  as grad_add, with the 16-bit gradient first cast to an fp32 copy (PyTorch
  //                  AMP's autograd cast, DeepSpeed's BF16_Optimizer: hp_grad.add_(lp_grad.to(fp32))).
  // Without one (Megatron-Core's gradient-accumulation fusion) the GEMM's epilogue accumulates C.
  enum class WeightPass : std::uint8_t { none, weight_cast, grad_add, grad_cast_add };
  WeightPass weight_pass = WeightPass::none;
};
struct AttentionArgs {  // scaled dot-product attention over [batch, heads, seq, head_dim]
  std::int64_t batch = 0, heads = 0, kv_heads = 0, seq = 0, head_dim = 0;
  bool causal = true;
  bool flash = false;  // fused kernel: no seq×seq matrix kept in memory
  // FlashAttention's major version (1, 2, 3) when flash; 0: the one the device's profile measured.
  // It prices the kernel, it does not change the arithmetic.
  int flash_version = 0;
  bool backward = false;
  // Context parallelism (Megatron-Core's context_parallel_size, Transformer Engine's cp_comm_type
  // "all_gather"): the sequence is cut into 2·cp_size chunks and rank r of the context-parallel
  // group holds chunks r and 2·cp_size−1−r (the load-balanced "zigzag" layout Megatron's
  // get_batch_on_this_cp_rank uses), so every rank sees as many causal scores as any other.
  // `seq` is then this rank's 2 chunks of queries; the keys and values of the whole sequence
  // (kv_seq() rows, all-gathered in member order, each member's two chunks together) come in a
  // separate tensor [batch, kv_seq, 2·kv_heads·head_dim] (K | V), and the backward writes their
  // gradient there (reduce-scattered back afterwards). Causal masking compares positions in the
  // sequence, not row indices.
  int cp_size = 1, cp_rank = 0;
  std::int64_t kv_seq() const { return seq * cp_size; }
};
// Position in the whole sequence of row i of member r's `local` rows under the zigzag layout
// (AttentionArgs): chunks of local/2 rows, r's first chunk is r, its second 2·cp−1−r.
inline std::int64_t zigzag_position(std::int64_t i, std::int64_t local, int cp, int r) {
  if (cp <= 1) return i;
  const std::int64_t c = local / 2;
  return i < c ? r * c + i : (2 * static_cast<std::int64_t>(cp) - 1 - r) * c + (i - c);
}
enum class NormKind : std::uint8_t { layer_norm, rms_norm };
struct NormArgs {
  NormKind norm = NormKind::layer_norm;
  std::int64_t rows = 0, cols = 0;
  bool backward = false;
  // The backward's weight gradients come from a kernel of their own that reads x and dy again
  // (apex's FusedLayerNorm: NormKernel::two_pass in strategies/models/transformer.hpp). Cost only.
  bool weight_grad_rereads = false;
};
// outer_nesterov: DiLoCo's outer step on fp32 tensors, in place, inputs = outputs = {average,
// anchor, momentum}: delta = anchor - average; momentum = mu·momentum + delta;
// anchor = average = anchor - lr·(delta + mu·momentum) (PyTorch's SGD with Nesterov momentum on
// the outer gradient delta). lr = 1, mu = 0 leave the average as it is.
enum class ElementwiseFn : std::uint8_t { gelu, swiglu, add, dropout, bias_add, scale, cast, outer_nesterov };
struct ElementwiseArgs {
  ElementwiseFn fn = ElementwiseFn::add;
  std::int64_t numel = 0;  // elements of the output
  bool backward = false;
  float lr = 0, momentum = 0;  // outer_nesterov's
  float factor = 0;  // a same-size scale's factor (0: none given here: zeroing by label, or the backend's)
};
struct EmbeddingArgs {
  std::int64_t tokens = 0, vocab = 0, hidden = 0;
  std::int64_t vocab_offset = 0;  // first row held by this rank (vocab-parallel)
  bool backward = false;
};
// Vocab-parallel cross-entropy (Megatron-LM) splits the forward into three steps around two
// tensor-parallel all-reduces, since each rank holds only `vocab` of the logit columns:
//   shard_max      local row maxima [tokens]                       -> all-reduce max
//   shard_sum_exp  Σ exp(z − global max) and the label's logit (0 when the label is another
//                  shard's) [tokens, 2]                            -> all-reduce sum
//   shard_finish   softmax of this shard and the per-token stats, as `full` writes them.
// `full` is the unsharded op (tensor parallel size 1). The backward is one op either way.
enum class LossStep : std::uint8_t { full, shard_max, shard_sum_exp, shard_finish };
struct LossArgs {  // softmax cross-entropy over the vocabulary
  std::int64_t tokens = 0, vocab = 0;
  bool backward = false;
  std::int64_t vocab_offset = 0;  // first vocabulary id of this rank's logit columns
  LossStep step = LossStep::full;
  // Priced as one fused kernel (Megatron-Core's --cross-entropy-loss-fusion, apex/flash-attn's
  // xentropy): the logits are read once each way instead of Megatron's fp32 passes. The
  // arithmetic is the same.
  bool fused = false;
};
struct OptimizerArgs {  // AdamW on a flat shard
  std::int64_t numel = 0;
  float lr = 3e-4f, beta1 = 0.9f, beta2 = 0.95f, eps = 1e-8f, weight_decay = 0.1f;
  // Gradients are multiplied by this before the update: 1 / (micro-batches in the global batch),
  // since each micro-batch's loss is a mean and gradients are summed over micro-batches and ranks.
  float grad_scale = 1.0f;
  std::int64_t step = 1;  // 1-based, for bias correction
  // ZeRO: the update covers elements [offset, offset + numel) of the parameter and gradient;
  // the state tensors hold just those numel elements.
  std::int64_t offset = 0;
  // ZeRO-Offload: every tensor is in host memory and the host's CPU runs the update.
  bool on_host = false;
};
// A copy between the device's memory and the host's (over the device's host link, PCIe), or
// within the device's memory (none).
enum class HostCopy : std::uint8_t { none, to_host, from_host };
struct MemcpyArgs {
  std::int64_t numel = 0;
  // A strided copy of columns (cudaMemcpy2D's shape) when rows > 0: `rows` rows of `cols`
  // elements, read from column src_col of a row-major source src_ld elements wide and written to
  // column dst_col of a destination dst_ld wide; numel = rows·cols. Context parallelism takes the
  // K|V columns out of the packed qkv rows this way (and puts their gradient back).
  std::int64_t rows = 0, cols = 0, src_ld = 0, src_col = 0, dst_ld = 0, dst_col = 0;
  HostCopy host = HostCopy::none;
};
// Mixture of experts (Megatron-Core's --num-experts / --moe-router-topk with an expert capacity,
// --moe-expert-capacity-factor and --moe-pad-expert-input-to-capacity, as GShard and Switch run
// it): every token picks `topk` of `experts` experts; each expert takes at most `capacity` tokens
// of this rank's `tokens`, in token order, the rest of its picks are dropped (their gate counts 0).
// Run as element-wise ops (memory-bound gathers and scatters; the expert GEMMs are batched GEMMs):
//   route     forward  {logits [T,E]} -> {gates [T,k], experts [T,k] int32, slots [T,k] int32 (place
//                      in the expert's buffer, -1 dropped), probs [T,E] fp32}: gates are the softmax
//                      over the k largest logits (Mixtral's router), probs the softmax over all.
//             backward {gates, experts, probs, d_gates} -> {d_logits [T,E]}, plus the gradient of
//                      Switch's load-balancing loss aux_loss_coeff·E·Σ_e f_e·P_e (f_e: the share
//                      of picks expert e got, P_e: its mean probability).
//   dispatch  forward  {x [T,h], experts, slots} -> {buffer [E,C,h]} (zeros where no token)
//             backward {d_buffer [E,C,h], experts, slots} -> {dx [T,h]}
//   combine   forward  {expert_out [E,C,h], experts, slots, gates} -> {y [T,h]} = Σ_k gate·out
//             backward {d_y, expert_out, experts, slots, gates} -> {d_expert_out [E,C,h], d_gates [T,k]}
//             With a fifth input, counts [E] fp32 (the picks per expert over every rank that holds
//             part of these sequences: context parallelism, `balance_tokens` tokens in all), f_e
//             is those counts' share (this rank's loss part stays a mean over its own tokens).
//   count     forward  {experts [T,k]} -> {counts [E] fp32}: the picks each expert got (context
//             parallelism sums them over the sequence's ranks for the load-balancing loss).
//   regroup   [ep, E/ep, C, h] (what an all-to-all over the expert-parallel group delivers: each
//             member's tokens for this rank's experts) -> [E/ep, ep·C, h] (each expert's rows
//             together, for its GEMMs); backward: the inverse. hidden = h, tokens unused.
enum class MoeStep : std::uint8_t { route, dispatch, combine, regroup, count };
const char* to_string(MoeStep step);
struct MoeArgs {
  MoeStep step = MoeStep::route;
  std::int64_t tokens = 0, hidden = 0, experts = 0, topk = 1, capacity = 0;
  int ep = 1;  // regroup: members of the expert-parallel group
  bool backward = false;
  float aux_loss_coeff = 0;  // route backward
  std::int64_t balance_tokens = 0;  // route backward with counts: the tokens they count (0: `tokens`)
};

// CodecArgs (gradient compression, strategies/compression/codec_args.hpp) run as element-wise ops.
using KernelArgs = std::variant<GemmArgs, AttentionArgs, NormArgs, ElementwiseArgs, EmbeddingArgs,
                                LossArgs, OptimizerArgs, MemcpyArgs, CodecArgs, MoeArgs>;

struct ComputeOp {
  OpKind kind = OpKind::elementwise;
  Phase phase = Phase::other;
  std::string label;  // e.g. "layer3.attn.qkv.fwd"; stable across backends
  KernelArgs args;
  std::vector<Tensor> inputs;
  std::vector<Tensor> outputs;
  Flops flops = 0;        // work (multiply-add = 2 FLOPs)
  Bytes bytes = 0;        // bytes read + written from device memory
  DType compute_dtype = DType::bf16;  // selects the device's peak (tensor core or not)
};
// An op the node's host takes part in (ZeRO-Offload): a copy to or from host memory, or the host
// CPU's optimizer step.
bool runs_on_host(const ComputeOp& op);

// A communicator: a set of global ranks. Group ids are assigned by the strategy and must be the
// same on every member (backends key their channels/communicators on it).
struct Group {
  int id = -1;
  std::vector<int> ranks;  // global ranks, in ring order
  int size() const { return static_cast<int>(ranks.size()); }
  int index_of(int global_rank) const;  // -1 when not a member
};

enum class ReduceOp : std::uint8_t { sum, avg, max };

// Member i's part of a tensor in a reduce-scatter or an all-gather (THE sharding convention,
// shared by every backend and by the strategies' ZeRO bookkeeping, gradient_sync.hpp):
//   dim < 0   element-wise: elements [i·c, min(n, (i+1)·c)) of the tensor's n elements,
//             c = ceil(n / members). A bucket is sharded tensor by tensor (each tensor of the
//             bucket this way), never as one concatenated buffer.
//   dim >= 0  blocks along dimension `dim`: indices [i·k, (i+1)·k) of it, k = size / members
//             (sequence parallelism shards [b, s, h] activations along s).
// Out of place: `tensors` (one per bucket tensor, or one for CommOp::buffer) hold the parts.
// A reduce-scatter writes member i's reduced part there (added to what they hold when
// `accumulate`: ZeRO-2 gradient partitions summed over micro-batches); an all-gather reads
// member i's contribution from there. Without tensors the collective is in place: the part
// lives at its position inside the full buffer.
struct CommShards {
  std::vector<Tensor> tensors;
  int dim = -1;
  bool accumulate = false;
};
struct CommOp {
  OpKind kind = OpKind::all_reduce;
  Phase phase = Phase::other;
  std::string label;
  Tensor buffer;  // send buffer (in place for all-reduce); for all-gather: the full output
  // A gradient bucket: when not empty, the collective covers these tensors as one flat buffer
  // (as DDP and Megatron reduce a contiguous bucket) and `buffer` is unused. A bucket's
  // reduce-scatter / all-gather shards each tensor element-wise (CommShards).
  std::vector<Tensor> bucket;
  CommShards shards;  // reduce-scatter output / all-gather input parts, when out of place
  Bytes bytes = 0;  // payload in the nccl-tests sense: the full tensor for all-reduce/all-gather/
                    // reduce-scatter (the concatenated size), the message for send/recv/broadcast
  Group group;      // for collectives
  int peer = -1;    // global rank, for send/recv
  int root = -1;    // global rank, for broadcast
  ReduceOp reduce = ReduceOp::sum;
  int tag = 0;      // distinguishes concurrent point-to-point streams between the same pair
  bool userbuffers = false;  // moved by Transformer Engine's userbuffers, not NCCL (Issue::userbuffers)
  // A point-to-point op may move part of `buffer`: elements [part_offset, part_offset +
  // part_numel) (a parameter server's partition of a gradient); -1: the whole buffer.
  std::int64_t part_offset = 0;
  std::int64_t part_numel = -1;
  // The elements an op moves from or into `buffer` ({offset, count}); throws std::logic_error
  // for a part outside it.
  std::pair<std::int64_t, std::int64_t> buffer_range() const;
};

}  // namespace tandem
