// CUDA mixture-of-experts routing and token movement (fp32, int32 indices): the contract of
// kernels/cpu/moe.hpp, whose header states the math (top-k picks with ties to the lower expert,
// gates the softmax over the picks, GShard's capacity priority, Switch's load-balancing loss),
// with the same MoeShape. Every output is OVERWRITTEN; every function enqueues on `stream` and
// returns at once.
//
// Equal to the CPU, not merely close: no atomics and no reordered sums where the CPU has an order.
//   route forward   one thread per token does the CPU's sequential work (selection by repeated
//                   arg-max under the CPU's total order, double sums in expert order): the same
//                   experts; gates and probs equal up to the device's double exp (1 ulp), which
//                   rounding to fp32 hides. Slots: one block per expert ranks its picks in
//                   priority order (ballot + block scan, integers): bit for bit the CPU's.
//   route backward  integer pick counts per expert, then one thread per token in the CPU's order
//                   with explicitly rounded double operations: bit for bit.
//   count           integer counts: bit for bit (below 2^24 picks per expert).
//   dispatch        a copy per (pick, element): every place is written by at most one pick.
//   dispatch bwd /  one thread per (token, element) adds its picks in pick order with explicitly
//   combine fwd     rounded fp32 (no FMA contraction, which the CPU build does not have): bit
//                   for bit.
//   combine bwd     one warp per pick: the output rows bit for bit; d_gates a double dot product
//                   summed in a fixed warp order (deterministic; equal to the CPU's sequential
//                   double sum once rounded to fp32, but for a tie at that rounding).
//   regroup         a copy.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cpu/moe.hpp"

namespace tandem::kernels::cuda {

using kernels::cpu::MoeShape;

// gates, experts, slots [tokens, topk]; probs [tokens, experts].
void moe_route_forward(float* gates, std::int32_t* experts, std::int32_t* slots, float* probs, const float* logits,
                       const MoeShape& s, cudaStream_t stream);
// d_logits [tokens, experts]. `counts` (nullable) and `balance_tokens` as on the CPU. `shares`:
// device scratch of s.experts doubles (f_e), used only when aux_loss_coeff != 0.
void moe_route_backward(float* d_logits, const float* gates, const std::int32_t* experts, const float* probs,
                        const float* d_gates, const MoeShape& s, float aux_loss_coeff, const float* counts,
                        std::int64_t balance_tokens, double* shares, cudaStream_t stream);
// counts [experts].
void moe_count(float* counts, const std::int32_t* experts, const MoeShape& s, cudaStream_t stream);

// buffer [experts, capacity, hidden] from x [tokens, hidden], and the transpose.
void moe_dispatch_forward(float* buffer, const float* x, const std::int32_t* experts, const std::int32_t* slots,
                          const MoeShape& s, cudaStream_t stream);
void moe_dispatch_backward(float* dx, const float* d_buffer, const std::int32_t* experts, const std::int32_t* slots,
                           const MoeShape& s, cudaStream_t stream);

void moe_combine_forward(float* y, const float* expert_out, const std::int32_t* experts, const std::int32_t* slots,
                         const float* gates, const MoeShape& s, cudaStream_t stream);
void moe_combine_backward(float* d_expert_out, float* d_gates, const float* d_y, const float* expert_out,
                          const std::int32_t* experts, const std::int32_t* slots, const float* gates,
                          const MoeShape& s, cudaStream_t stream);

// [ep, local_experts, capacity, hidden] -> [local_experts, ep, capacity, hidden]; `inverse` the
// other way. dst and src must not overlap.
void moe_regroup(float* dst, const float* src, std::int64_t ep, std::int64_t local_experts, std::int64_t capacity,
                 std::int64_t hidden, bool inverse, cudaStream_t stream);

}  // namespace tandem::kernels::cuda
