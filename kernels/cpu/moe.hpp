// CPU reference of the mixture-of-experts gathers and scatters (MoeArgs, strategies/op.hpp),
// fp32 with int32 indices. A token's k picks are its k largest router logits (ties to the lower
// expert), in descending order; its gates are the softmax over those k logits (Mixtral's router,
// normalised over the picks). Experts fill their `capacity` places by priority as GShard does:
// every token's first pick, in token order, before any second pick; a pick past the capacity is
// dropped (slot -1): it adds nothing to the token's output and gets no gradient.
//
// Buffers are [experts, capacity, hidden]; places no token took hold zeros. Every output is
// OVERWRITTEN.
#pragma once

#include <cstdint>

namespace tandem::kernels::cpu {

struct MoeShape {
  std::int64_t tokens = 0, hidden = 0, experts = 0, topk = 1, capacity = 0;
};

// The load real routings put on the experts: per routing the busiest expert's picks over the
// mean (tokens·topk / experts), its mean and largest over the routings seen. What the simulator's
// dropless pricing takes as model.moe_router_load_imbalance (TransformerConfig).
struct RouterLoad {
  std::int64_t routings = 0;
  double ratio_sum = 0, ratio_max = 0;
  void add(const std::int32_t* experts, const MoeShape& s);  // experts [tokens, topk]
  void merge(const RouterLoad& other);
  double mean_ratio() const { return routings > 0 ? ratio_sum / static_cast<double>(routings) : 0; }
};

// gates, experts, slots [tokens, topk]; probs [tokens, experts] (the softmax over every expert).
void moe_route_forward(float* gates, std::int32_t* experts, std::int32_t* slots, float* probs, const float* logits,
                       const MoeShape& s);
// d_logits [tokens, experts] from the gates' gradient, plus the gradient of Switch Transformer's
// load-balancing loss aux_loss_coeff·E·Σ_e f_e·P_e (Fedus et al. 2021, arXiv 2101.03961, eq. 4:
// f_e the share of the picks that chose e, P_e the mean probability of e over the tokens).
// `counts` (null: this routing's own): the picks per expert over `balance_tokens` tokens of which
// these are part (context parallelism: the whole sequences' picks, summed over their ranks), which
// set f_e; the loss stays a mean over these tokens (the step divides by the ranks).
void moe_route_backward(float* d_logits, const float* gates, const std::int32_t* experts, const float* probs,
                        const float* d_gates, const MoeShape& s, float aux_loss_coeff, const float* counts = nullptr,
                        std::int64_t balance_tokens = 0);
// counts [experts]: the picks each expert got.
void moe_count(float* counts, const std::int32_t* experts, const MoeShape& s);
// The value of that loss for one routing (reported beside the language-model loss in tests).
double moe_load_balancing_loss(const std::int32_t* experts, const float* probs, const MoeShape& s,
                               float aux_loss_coeff);

void moe_dispatch_forward(float* buffer, const float* x, const std::int32_t* experts, const std::int32_t* slots,
                          const MoeShape& s);
void moe_dispatch_backward(float* dx, const float* d_buffer, const std::int32_t* experts, const std::int32_t* slots,
                           const MoeShape& s);

void moe_combine_forward(float* y, const float* expert_out, const std::int32_t* experts, const std::int32_t* slots,
                         const float* gates, const MoeShape& s);
void moe_combine_backward(float* d_expert_out, float* d_gates, const float* d_y, const float* expert_out,
                          const std::int32_t* experts, const std::int32_t* slots, const float* gates,
                          const MoeShape& s);

// [ep, local_experts, capacity, hidden] -> [local_experts, ep, capacity, hidden]; `inverse` the
// other way.
void moe_regroup(float* dst, const float* src, std::int64_t ep, std::int64_t local_experts, std::int64_t capacity,
                 std::int64_t hidden, bool inverse);

}  // namespace tandem::kernels::cpu
