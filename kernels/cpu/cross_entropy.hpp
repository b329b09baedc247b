// CPU reference softmax cross-entropy (fp32 softmax, double row sums), forward and backward,
// plus the vocab-sharded (Megatron vocab-parallel) pieces.
//
// Conventions (strategies/ops.hpp): forward inputs {logits [tokens, vocab], labels [tokens]}
// outputs {softmax [tokens, vocab] fp32, stats [tokens, 2]}; backward inputs {softmax, labels}
// outputs {d_logits}. Chosen here:
//   stats[t] = { loss_t, lse_t }: the token's loss lse_t − logit[label_t] and the logsumexp of
//              its logit row. The micro-batch loss is the MEAN over tokens of loss_t
//              (cross_entropy_mean_loss; the models issue it as the "loss.mean" scale op).
//   d_logits = (softmax − onehot(label)) · grad_scale, grad_scale = 1/tokens for the mean loss
//              (the loss gradient dL = 1 is implied: the models never materialise it).
//   labels:    a negative label marks an ignored token (padding): loss 0, gradient row 0; it
//              still counts in the mean's denominator (tokens). A label outside the shard
//              [vocab_offset, vocab_offset + vocab) is another shard's target: its one-hot
//              is absent here, the softmax term stays.
// Labels are int32 token ids.
//
// Vocab-parallel (tensor-parallel output layer, each rank holding `vocab` columns starting at
// vocab_offset): the softmax needs the GLOBAL row max and sum. The sharded protocol is
// Megatron-LM's (LossStep in strategies/op.hpp): softmax_shard_max on each shard → all-reduce
// MAX of the row maxima → softmax_shard_sum_exp with the global maxima → all-reduce SUM of
// {Σ exp, label logit} → cross_entropy_shard_finish writes the globally normalised softmax of
// the shard and {loss, lse}. The backward is then the ordinary cross_entropy_backward with the
// shard's vocab_offset.
#pragma once

#include <cstdint>

namespace tandem::kernels::cpu {

// softmax and stats may each be null.
void cross_entropy_forward(float* softmax, float* stats, const float* logits,
                           const std::int32_t* labels, std::int64_t tokens, std::int64_t vocab,
                           std::int64_t vocab_offset = 0);
// Σ_t stats[t·2] / tokens.
float cross_entropy_mean_loss(const float* stats, std::int64_t tokens);
// d_logits (OVERWRITTEN) = (softmax − onehot)·grad_scale.
void cross_entropy_backward(float* d_logits, const float* softmax, const std::int32_t* labels,
                            std::int64_t tokens, std::int64_t vocab, float grad_scale,
                            std::int64_t vocab_offset = 0);

// ---- vocab-sharded pieces ----
// row_max[t] = max_j z_tj over this shard.
void softmax_shard_max(float* row_max, const float* logits, std::int64_t tokens,
                       std::int64_t vocab);
// sums[t] = { Σ_j exp(z_tj − global_max[t]), z_t,label if the label is in this shard else 0 }.
void softmax_shard_sum_exp(float* sums, const float* logits, const std::int32_t* labels,
                           const float* global_max, std::int64_t tokens, std::int64_t vocab,
                           std::int64_t vocab_offset);
// From the reduced global_max and sums: softmax (nullable) = exp(z − lse) over this shard's
// columns, stats (nullable) = { loss_t, lse_t } as in cross_entropy_forward.
void cross_entropy_shard_finish(float* softmax, float* stats, const float* logits,
                                const float* global_max, const float* sums,
                                const std::int32_t* labels, std::int64_t tokens,
                                std::int64_t vocab);

}  // namespace tandem::kernels::cpu
