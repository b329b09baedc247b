// Decoder-only transformers (GPT, Llama) written against the per-rank interface, with Megatron-LM
// tensor parallelism (column/row-parallel linears, vocab-parallel embedding and loss), sequence
// parallelism, and selective/full activation recomputation; plus the analytic figures they are
// tested against (parameter count, model FLOPs per token, a GPT layer's saved activations).
//
// Layers built for a rank, in order (their name() in quotes):
//   "embedding"  token (+ learned position) embedding, dropout            input: token ids [b, s]
//   "layer{i}"   pre-norm attention block + pre-norm MLP block, i = 0..L-1  input: [b, s/t?, h]
//   "lm_head"    final norm, output GEMM (tied or own weights), cross-entropy; returns loss [1]
//
// Labels are "mb{k}.{layer}.{op}.{suffix}" with suffix fwd | bwd (input gradient) | bwd_w (weight
// gradient) | recompute (forward work redone in backward), e.g. "mb0.layer3.attn.qkv.fwd",
// "mb0.layer3.attn.proj.allreduce.fwd", "mb0.layer3.mlp.fc1.bwd_w". They are unique within an
// iteration as long as micro-batch numbers are.
//
// Sharding (tp = t): QKV and fc1 are column-parallel (heads, query groups and ffn split by t),
// proj and fc2 row-parallel; word embedding and output layer are vocab-parallel with
// ceil(V/t) rows per rank; norms and row-parallel biases are replicated. Without sequence
// parallelism the block issues an all-reduce of b·s·h elements after proj and fc2 (forward) and
// after the QKV and fc1 input-gradient GEMMs (backward); with it, all-gather before QKV/fc1 and
// reduce-scatter after proj/fc2 (forward), the conjugates in backward plus the re-gather of the
// QKV/fc1 inputs for their weight gradients (as Megatron-LM does), and norms/dropout on s/t.
// The vocab-parallel loss is Megatron's: local row max → all-reduce max → local sum of
// exponentials and label logit → all-reduce sum → local softmax and per-token loss (LossStep,
// op.hpp). Sequence-parallel collectives move [b, s, h] activations to and from the sequence
// shards [b, s/t, h] out of place (CommShards along dimension 1); the gradients of parameters
// applied on a sequence shard (norms, the biases after a reduce-scatter, positions) are
// partial and listed by tensor_partial_gradients() for the strategy to all-reduce.
// Mixture-of-experts blocks under tensor parallelism split each expert's width (and the shared
// expert's) as the dense MLP's (expert-tensor parallelism equal to the tensor-parallel size): every
// rank of the tensor group routes all tokens alike, and the block's output and input gradient are
// reduced over the group as the dense MLP's are; the router's gradient is a partial sum there.
// Every parameter is placed in its logical tensor (placements(): QKV's columns are this rank's
// slices of Q, K and V; fc1's of gate and up), so a backend can initialise and checkpoint it
// as part of the one global tensor.
// Communication runs on Stream::tp_comm; the compute op that consumes its result lists it in
// Issue::after (a stream wait, not a host wait). The input-gradient all-reduce overlaps the
// weight-gradient GEMM, as in Megatron-LM.
//
// Weights are stored [in, out] (Y = X·W); word embedding and output layer [V/t, h] (logits =
// X·Wᵀ), so a tied output layer uses the embedding table itself. With tied embeddings, whichever
// of "embedding" and "lm_head" is allocated first on a runtime allocates the table and reports
// it in parameters()/gradients(); the other reuses it and does not report it. A pipeline stage
// holding only "lm_head" therefore allocates its own copy (Megatron's embedding copy on the last
// stage, whose gradient a strategy all-reduces with the first stage's). The layer that reuses
// the table reports it in borrowed_parameters()/borrowed_gradients().
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/checked_math.hpp"
#include "strategies/model.hpp"

namespace tandem {

enum class NormType { layernorm, rmsnorm };
// How the norm's backward computes its weight (and bias) gradients. one_pass: in the pass that
// computes the input gradient, as Transformer Engine's kernels, apex's FastLayerNorm and
// flash-attn's dropout_add_layer_norm do (x and dy read once). two_pass: in a kernel of their own
// that reads x and dy again (cuComputePartGradGammaBeta beside cuComputeGradInput): apex's
// FusedLayerNorm/FusedRMSNorm, Megatron-LM's MixedFusedLayerNorm (its only norm up to 2022:
// megatron/fused_kernels/layer_norm_cuda_kernel.cu at 6985e58, Megatron-DeepSpeed's copy) and
// PyTorch's own nn.LayerNorm backward.
enum class NormKernel { one_pass, two_pass };
enum class ActivationType { gelu, swiglu };
enum class PositionEmbeddingType { learned, rope };
const char* to_string(NormType norm);
const char* to_string(NormKernel kernel);
const char* to_string(ActivationType activation);
const char* to_string(PositionEmbeddingType position);

// Megatron-LM argument names.
struct TransformerConfig {
  std::string name;
  std::int64_t num_layers = 0;
  std::int64_t hidden_size = 0;
  std::int64_t num_attention_heads = 0;
  std::int64_t num_query_groups = 0;  // KV heads; 0 means num_attention_heads (MHA)
  std::int64_t ffn_hidden_size = 0;   // 0 means 4·hidden_size
  std::int64_t kv_channels = 0;       // head dim; 0 means hidden_size / num_attention_heads
  std::int64_t vocab_size = 0;
  std::int64_t max_position_embeddings = 0;  // rows of the learned position table; 0: seq_length
  std::int64_t seq_length = 0;               // default training sequence length
  NormType norm = NormType::layernorm;
  NormKernel norm_kernel = NormKernel::one_pass;  // prices the backward kernel only
  ActivationType activation = ActivationType::gelu;
  PositionEmbeddingType position = PositionEmbeddingType::learned;
  bool tied_embeddings = true;  // output layer shares the word-embedding table
  bool bias = true;             // biases in the linears and norms (GPT yes, Llama no)
  bool use_flash_attn = false;
  // FlashAttention's major version the run uses (1, 2 or 3); 0: the newest the device's profile
  // measured. Only the simulator's price of the attention kernel depends on it.
  int flash_attn_version = 0;
  // Megatron-Core's cross_entropy_loss_fusion (and apex/flash-attn's xentropy kernel): the loss
  // is one fused kernel each way. Off: Megatron's vocab-parallel cross-entropy in fp32 passes.
  bool cross_entropy_loss_fusion = false;
  double hidden_dropout = 0.1;     // after embedding, attention projection and MLP
  double attention_dropout = 0.1;  // on the attention probabilities
  // Mixture of experts (Megatron-Core's names): with num_moe_experts > 0 every block's MLP is
  // that many experts (each an MLP of moe_ffn_hidden_size, no biases) behind a top-k router
  // (no bias): a token goes through its moe_router_topk experts, weighted by its gates (the
  // softmax over its k largest router logits). An expert takes at most
  // ceil(moe_expert_capacity_factor · tokens · k / experts) of a rank's micro-batch tokens (padded
  // to that capacity, as --moe-pad-expert-input-to-capacity); 0: every token (dropless, at the
  // cost of computing full buffers). moe_aux_loss_coeff: Switch's load-balancing loss.
  std::int64_t num_moe_experts = 0;
  std::int64_t moe_router_topk = 2;
  std::int64_t moe_ffn_hidden_size = 0;  // 0 means ffn_size()
  double moe_expert_capacity_factor = 0;
  // Dropless routing as a cost model prices it (Runtime::dropless_expert_rows): the busiest
  // expert's rows over its balanced share k·tokens/E. 0: the balanced router's statistical floor
  // (expected_busiest_expert_rows); a measured max/mean load ratio otherwise.
  double moe_router_load_imbalance = 0;
  double moe_aux_loss_coeff = 0;
  // A shared expert (DeepSeek's, Megatron-Core's --moe-shared-expert-intermediate-size): an MLP of
  // this width every token goes through beside its routed experts (0: none).
  std::int64_t moe_shared_expert_intermediate_size = 0;
  // The first blocks keep a dense MLP of ffn_hidden_size (DeepSeek-V3's first_k_dense_replace,
  // Megatron-Core's --moe-layer-freq "[0]*k + [1]*rest").
  std::int64_t moe_first_dense_layers = 0;

  bool moe() const { return num_moe_experts > 0; }
  // Whether block `layer` (0-based) has experts.
  bool moe_layer(std::int64_t layer) const { return moe() && layer >= moe_first_dense_layers; }
  std::int64_t expert_ffn_size() const { return moe_ffn_hidden_size > 0 ? moe_ffn_hidden_size : ffn_size(); }
  // Places per expert for `tokens` tokens (the buffers' C).
  std::int64_t expert_capacity(std::int64_t tokens) const;
  // The busiest expert's expected rows when a rank routes `tokens` dropless: with
  // moe_router_load_imbalance r > 0, ceil(r·k·tokens/E); else each expert's load as a balanced
  // router's (a binomial of tokens draws at k/E: mean μ, deviation σ) at the expected maximum of E
  // such loads, μ + z_E·σ (z_E: Blom's expected largest of E standard normals). In [1, tokens].
  std::int64_t expected_busiest_expert_rows(std::int64_t tokens) const;
  // What a cost model prices each expert's buffer at: the capacity, or dropless the expected load.
  std::int64_t priced_expert_rows(std::int64_t tokens) const;

  std::int64_t query_groups() const {
    return num_query_groups > 0 ? num_query_groups : num_attention_heads;
  }
  std::int64_t ffn_size() const {
    return ffn_hidden_size > 0 ? ffn_hidden_size : checked_mul<std::int64_t>(4, hidden_size, "ffn size (4 x hidden_size)");
  }
  std::int64_t max_positions() const {
    return max_position_embeddings > 0 ? max_position_embeddings : seq_length;
  }
  std::int64_t head_dim() const {
    return kv_channels > 0 ? kv_channels : hidden_size / num_attention_heads;
  }
};

// Throws std::invalid_argument naming the field that is wrong.
void validate(const TransformerConfig& cfg);

// ---- analytic figures ----
// Parameters of the whole model, exactly: every weight, bias and norm parameter, the word
// embedding, learned position embeddings, and the output layer when untied.
std::int64_t parameter_count(const TransformerConfig& cfg);
std::int64_t embedding_parameter_count(const TransformerConfig& cfg);   // word + position
std::int64_t block_parameter_count(const TransformerConfig& cfg);       // one layer (with experts, if any)
std::int64_t block_parameter_count(const TransformerConfig& cfg, std::int64_t layer);  // block `layer`
std::int64_t head_parameter_count(const TransformerConfig& cfg);        // final norm (+ untied output)
// The N of "6N": all parameters except learned position embeddings and, when untied, the input
// word-embedding table (neither takes part in a matmul). The tied table counts once: the
// output-layer GEMM uses it. Norm and bias parameters count (they are ~0.1%).
std::int64_t flops_parameter_count(const TransformerConfig& cfg);
// Parameters that are GEMM weights (what 2·N_gemm FLOPs per token forward counts exactly); with
// experts, those a token goes through (its k experts and the router).
std::int64_t gemm_parameter_count(const TransformerConfig& cfg);
// With experts: the parameters one token goes through (the dense parts, the router and k of the
// experts of every block): Mixtral 8x7B's 12.9B of 46.7B. parameter_count() otherwise.
std::int64_t active_parameter_count(const TransformerConfig& cfg);
// Model FLOPs per token, forward + backward, no recompute: 6·N + 6·L·s·h with N =
// flops_parameter_count (the active parameters with experts) and causal attention (QKᵀ and PV
// over half the s² scores). Use with tokens = B·s for MFU.
Flops model_flops_per_token(const TransformerConfig& cfg, std::int64_t seq_len);
// Narayanan et al. 2021 (arXiv 2104.04473) per iteration with full recompute:
// 96·B·s·l·h²·(1 + s/(6h) + V/(16·l·h)). It counts non-causal attention (all s² scores); pass
// causal = true to halve the attention term (s/(12h)), which is what this model issues.
Flops megatron_flops_per_iteration(const TransformerConfig& cfg, std::int64_t global_batch,
                                   std::int64_t seq_len, bool causal = false);

// Bytes of activations a GPT layer (MHA, ffn = 4h, GELU, dropout everywhere, unfused attention)
// saves for one micro-batch in 16 bits, counted from the tensors Megatron-LM's layer keeps for its
// backward (megatron/model/transformer.py): per token, the two norms' inputs (2h + 2h), the QKV
// GEMM's input (2h), Q and K for QKᵀ (4h), V (2h), the projection's input (2h), the fc1 input
// (2h), the GeLU input and the fc2 input (8h + 8h) and two one-byte dropout masks (h + h): 34h;
// per head and score, the softmax output (2), the attention-dropout mask (1) and the dropped
// probabilities PV reads (2): 5·a·s. So s·b·h·(34 + 5·a·s/h) without parallelism; tensor parallel
// t splits all but the norms' inputs, the dropout masks and the QKV/fc1 inputs (10 of the 34):
// s·b·h·(10 + 24/t + 5·a·s/(h·t)); sequence parallel splits those too: s·b·h/t·(34 + 5·a·s/h);
// selective recompute drops the 5·a·s/h term; full recompute keeps the input, 2·s·b·h (/t with SP).
Bytes gpt_layer_activation_bytes(std::int64_t micro_batch, std::int64_t seq_len, std::int64_t hidden,
                                 std::int64_t heads, int tp, bool sequence_parallel, Recompute recompute);
// The same breakdown for any configuration (GQA, SwiGLU, no dropout, flash attention's fp32
// logsumexp instead of the s² matrices, activation dtype, FP8 linears, whose norm outputs are kept
// in one byte): equals the formula above for a GPT layer in 16 bits, and equals what
// TransformerBlock::saved_activation_bytes() measures.
Bytes activation_bytes_per_layer(const TransformerConfig& cfg, std::int64_t micro_batch,
                                 std::int64_t seq_len, int tp, bool sequence_parallel,
                                 Recompute recompute, DType dtype = DType::bf16, Fp8Recipe fp8 = Fp8Recipe::none);

class TransformerModel : public Model {
 public:
  explicit TransformerModel(TransformerConfig cfg);  // validates
  const TransformerConfig& config() const { return cfg_; }

  ModelDescription describe() const override;  // model_flops_per_token at cfg.seq_length
  std::int64_t experts() const override { return cfg_.num_moe_experts; }
  // Throws std::invalid_argument when the context cannot shard this model (heads, query groups,
  // ffn not divisible by tp; seq_len not divisible by tp with sequence parallelism).
  std::vector<std::unique_ptr<Layer>> build_layers(const BatchShape& batch,
                                                   const ParallelContext& ctx) const override;
  // Token ids [b, s] int32, "mb{k}.tokens", an activation the embedding layer takes over.
  Tensor make_input(Runtime& rt, const BatchShape& batch, int micro_batch,
                    const ParallelContext& ctx = {}) const override;

 private:
  TransformerConfig cfg_;
};

}  // namespace tandem
