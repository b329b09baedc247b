#include "kernels/cuda/moe.cuh"

#include <stdexcept>

#include "kernels/cuda/check.hpp"
#include "kernels/cuda/rng.cuh"

namespace tandem::kernels::cuda {
namespace {

using I64 = std::int64_t;
constexpr int kThreads = 256;
constexpr int kTokenThreads = 128;   // one thread per token: few tokens per block spreads them over the SMs
constexpr int kExpertThreads = 1024; // one block per expert scanning every pick
constexpr unsigned kFullWarp = 0xffffffffu;

// Grid-stride loops over `n` items of `width` threads each (1: a thread per item, 32: a warp).
__device__ __forceinline__ I64 first_item(int width) {
  return (blockIdx.x * static_cast<I64>(blockDim.x) + threadIdx.x) / width;
}
__device__ __forceinline__ I64 item_stride(int width) { return static_cast<I64>(gridDim.x) * blockDim.x / width; }

// Expert a before expert b in the CPU's order of picks: the larger logit, ties to the lower expert
// (a strict total order, so the k first are one set in one order).
__device__ __forceinline__ bool ranks_before(const float* l, I64 a, I64 b) {
  return l[a] > l[b] || (l[a] == l[b] && a < b);
}

// One thread per token, the CPU's loop as it is: the softmax over every expert (double sum in
// expert order), then the k picks by repeated arg-max over the experts ranked after the previous
// pick (no per-thread list of picked experts; k·E comparisons), and the gates' softmax over them.
__global__ void route_picks(float* gates, std::int32_t* experts, float* probs, const float* logits, I64 tokens, I64 E,
                            I64 k) {
  for (I64 t = first_item(1); t < tokens; t += item_stride(1)) {
    const float* l = logits + t * E;
    float top = l[0];  // std::max_element's value: the first largest
    for (I64 e = 1; e < E; ++e)
      if (top < l[e]) top = l[e];
    double sum = 0;
    for (I64 e = 0; e < E; ++e) sum += exp(static_cast<double>(l[e] - top));
    for (I64 e = 0; e < E; ++e) probs[t * E + e] = static_cast<float>(exp(static_cast<double>(l[e] - top)) / sum);
    std::int32_t* picks = experts + t * k;
    double picked = 0;
    I64 previous = -1;
    for (I64 i = 0; i < k; ++i) {
      I64 best = -1;
      for (I64 e = 0; e < E; ++e) {
        if (previous >= 0 && !ranks_before(l, previous, e)) continue;  // picked already
        if (best < 0 || ranks_before(l, e, best)) best = e;
      }
      picks[i] = static_cast<std::int32_t>(best);
      picked += exp(static_cast<double>(l[best] - top));
      previous = best;
    }
    for (I64 i = 0; i < k; ++i) gates[t * k + i] = static_cast<float>(exp(static_cast<double>(l[picks[i]] - top)) / picked);
  }
}

// GShard's places, one block per expert: the expert's picks ranked in priority order (pick i of
// token t at q = i·tokens + t: every first pick before any second pick), a chunk of blockDim.x
// picks at a time: a ballot per warp, an exclusive scan of the warps' counts, and the running count
// of the chunks before. Integer ranks: exactly the CPU's sequential filling. blockDim.x: a multiple
// of 32, at most 1024.
__global__ void route_slots(std::int32_t* slots, const std::int32_t* experts, I64 tokens, I64 k, I64 capacity) {
  __shared__ int warp_base[32];
  __shared__ int chunk_total;
  const int e = static_cast<int>(blockIdx.x);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  const I64 n = tokens * k;
  I64 filled = 0;
  for (I64 start = 0; start < n; start += blockDim.x) {
    const I64 q = start + threadIdx.x;
    const I64 p = q < n ? (q % tokens) * k + q / tokens : 0;
    const bool mine = q < n && experts[p] == e;
    const unsigned ballot = __ballot_sync(kFullWarp, mine);
    if (lane == 0) warp_base[warp] = __popc(ballot);
    __syncthreads();
    if (warp == 0) {
      const int own = lane < warps ? warp_base[lane] : 0;
      int inclusive = own;
      for (int o = 1; o < 32; o <<= 1) {
        const int v = __shfl_up_sync(kFullWarp, inclusive, o);
        if (lane >= o) inclusive += v;
      }
      if (lane < warps) warp_base[lane] = inclusive - own;
      if (lane == 31) chunk_total = inclusive;
    }
    __syncthreads();
    if (mine) {
      const I64 place = filled + warp_base[warp] + __popc(ballot & ((1u << lane) - 1u));
      slots[p] = place < capacity ? static_cast<std::int32_t>(place) : -1;
    }
    filled += chunk_total;
    __syncthreads();  // warp_base and chunk_total are rewritten by the next chunk
  }
}

// The picks expert blockIdx.x got, counted as integers (every thread gets the count).
__device__ I64 picks_of(const std::int32_t* experts, I64 n) {
  const int e = static_cast<int>(blockIdx.x);
  I64 count = 0;
  for (I64 start = 0; start < n; start += blockDim.x) {
    const I64 p = start + threadIdx.x;
    count += __syncthreads_count(p < n && experts[p] == e);
  }
  return count;
}

__global__ void count_picks(float* counts, const std::int32_t* experts, I64 n) {
  const I64 count = picks_of(experts, n);
  if (threadIdx.x == 0) counts[blockIdx.x] = static_cast<float>(count);
}

// f_e of the load-balancing loss: the given counts' share, or this routing's, of `total_picks`.
__global__ void balance_shares(double* shares, const std::int32_t* experts, const float* counts, I64 n,
                               double total_picks) {
  const double count = counts ? static_cast<double>(counts[blockIdx.x]) : static_cast<double>(picks_of(experts, n));
  if (threadIdx.x == 0) shares[blockIdx.x] = count / total_picks;
}

// One thread per token in the CPU's order. Every product that feeds a sum is rounded on its own
// (__dmul_rn, __fmul_rn: no fused multiply-add, which the CPU build does not emit), so each value
// is the CPU's bit for bit. `shares` null: no load-balancing loss.
__global__ void route_bwd(float* d_logits, const float* gates, const std::int32_t* experts, const float* probs,
                          const float* d_gates, const double* shares, double scale, I64 tokens, I64 E, I64 k) {
  for (I64 t = first_item(1); t < tokens; t += item_stride(1)) {
    float* d = d_logits + t * E;
    for (I64 e = 0; e < E; ++e) d[e] = 0.0f;
    // Softmax over the picks: dl_i = g_i (dg_i − Σ_j g_j dg_j).
    double dot = 0;
    for (I64 i = 0; i < k; ++i)
      dot = __dadd_rn(dot, __dmul_rn(static_cast<double>(gates[t * k + i]), static_cast<double>(d_gates[t * k + i])));
    for (I64 i = 0; i < k; ++i) {
      float& v = d[experts[t * k + i]];
      const double g = gates[t * k + i], dg = d_gates[t * k + i];
      v = __fadd_rn(v, __double2float_rn(__dmul_rn(g, __dsub_rn(dg, dot))));
    }
    if (!shares) continue;
    // d aux / d probs[t][e] = scale·f_e, through the softmax over every expert.
    const float* pr = probs + t * E;
    double aux = 0;
    for (I64 e = 0; e < E; ++e) aux = __dadd_rn(aux, __dmul_rn(__dmul_rn(static_cast<double>(pr[e]), scale), shares[e]));
    for (I64 e = 0; e < E; ++e) {
      const double grad = __dmul_rn(static_cast<double>(pr[e]), __dsub_rn(__dmul_rn(scale, shares[e]), aux));
      d[e] = __fadd_rn(d[e], __double2float_rn(grad));
    }
  }
}

// A copy per (pick, element) into the pick's place; a place holds at most one pick.
__global__ void dispatch_fwd(float* buffer, const float* x, const std::int32_t* experts, const std::int32_t* slots,
                             I64 picks, I64 k, I64 capacity, I64 h) {
  for (I64 i = first_item(1); i < picks * h; i += item_stride(1)) {
    const I64 p = i / h, j = i - p * h;
    if (slots[p] < 0) continue;
    buffer[(experts[p] * capacity + slots[p]) * h + j] = x[(p / k) * h + j];
  }
}

// Each token's sum over its placed picks of the place's row weighted by the gate (1 without
// gates): one thread per (token, element) adding the picks in pick order from 0, each product
// rounded before its addition, as the CPU does.
__global__ void sum_picks(float* y, const float* buffer, const std::int32_t* experts, const std::int32_t* slots,
                          const float* gates, I64 tokens, I64 k, I64 capacity, I64 h) {
  for (I64 i = first_item(1); i < tokens * h; i += item_stride(1)) {
    const I64 t = i / h, j = i - t * h;
    float acc = 0.0f;
    for (I64 p = t * k; p < (t + 1) * k; ++p) {
      if (slots[p] < 0) continue;
      const float weight = gates ? gates[p] : 1.0f;
      acc = __fadd_rn(acc, __fmul_rn(weight, buffer[(experts[p] * capacity + slots[p]) * h + j]));
    }
    y[i] = acc;
  }
}

// One warp per pick: the place's gradient row gate·d_y (coalesced), and the gate's gradient
// Σ_j out·d_y in double, the lanes' partial sums joined in a fixed butterfly order.
__global__ void combine_bwd(float* d_expert_out, float* d_gates, const float* d_y, const float* expert_out,
                            const std::int32_t* experts, const std::int32_t* slots, const float* gates, I64 picks,
                            I64 k, I64 capacity, I64 h) {
  const int lane = threadIdx.x & 31;
  for (I64 p = first_item(32); p < picks; p += item_stride(32)) {
    if (slots[p] < 0) {
      if (lane == 0) d_gates[p] = 0.0f;
      continue;
    }
    const I64 place = (experts[p] * capacity + slots[p]) * h;
    const float* dy = d_y + (p / k) * h;
    const float gate = gates[p];
    double dot = 0;
    for (I64 j = lane; j < h; j += 32) {
      d_expert_out[place + j] = gate * dy[j];
      dot = __dadd_rn(dot, __dmul_rn(static_cast<double>(expert_out[place + j]), static_cast<double>(dy[j])));
    }
    for (int o = 16; o > 0; o >>= 1) dot += __shfl_xor_sync(kFullWarp, dot, o);
    if (lane == 0) d_gates[p] = static_cast<float>(dot);
  }
}

// i indexes the member-major layout [ep, local, block], j the expert-major [local, ep, block].
__global__ void regroup(float* dst, const float* src, I64 ep, I64 local, I64 block, bool inverse) {
  for (I64 i = first_item(1); i < ep * local * block; i += item_stride(1)) {
    const I64 r = i % block, member_expert = i / block;
    const I64 e = member_expert % local, m = member_expert / local;
    const I64 j = (e * ep + m) * block + r;
    if (inverse) dst[i] = src[j];
    else dst[j] = src[i];
  }
}

void zero(float* p, I64 n, cudaStream_t stream) {
  if (n > 0) CUDA_CHECK(cudaMemsetAsync(p, 0, sizeof(float) * static_cast<std::size_t>(n), stream));
}

unsigned expert_blocks(const MoeShape& s) { return static_cast<unsigned>(s.experts); }

}  // namespace

void moe_route_forward(float* gates, std::int32_t* experts, std::int32_t* slots, float* probs, const float* logits,
                       const MoeShape& s, cudaStream_t stream) {
  if (s.tokens <= 0 || s.experts <= 0) return;
  route_picks<<<blocks_for(s.tokens, kTokenThreads), kTokenThreads, 0, stream>>>(gates, experts, probs, logits,
                                                                                 s.tokens, s.experts, s.topk);
  CUDA_CHECK_LAUNCH();
  route_slots<<<expert_blocks(s), kExpertThreads, 0, stream>>>(slots, experts, s.tokens, s.topk, s.capacity);
  CUDA_CHECK_LAUNCH();
}

void moe_route_backward(float* d_logits, const float* gates, const std::int32_t* experts, const float* probs,
                        const float* d_gates, const MoeShape& s, float aux_loss_coeff, const float* counts,
                        I64 balance_tokens, double* shares, cudaStream_t stream) {
  if (s.tokens <= 0 || s.experts <= 0) return;
  const bool balance = aux_loss_coeff != 0;
  if (balance && !shares) throw std::invalid_argument("moe_route_backward: the load-balancing loss needs `shares` scratch");
  if (balance) {
    // The CPU's f_e and scale, in the same double expressions.
    const I64 all = counts != nullptr && balance_tokens > 0 ? balance_tokens : s.tokens;
    balance_shares<<<expert_blocks(s), kExpertThreads, 0, stream>>>(shares, experts, counts, s.tokens * s.topk,
                                                                    static_cast<double>(all * s.topk));
    CUDA_CHECK_LAUNCH();
  }
  const double scale =
      static_cast<double>(aux_loss_coeff) * static_cast<double>(s.experts) / static_cast<double>(s.tokens);
  route_bwd<<<blocks_for(s.tokens, kTokenThreads), kTokenThreads, 0, stream>>>(
      d_logits, gates, experts, probs, d_gates, balance ? shares : nullptr, scale, s.tokens, s.experts, s.topk);
  CUDA_CHECK_LAUNCH();
}

void moe_count(float* counts, const std::int32_t* experts, const MoeShape& s, cudaStream_t stream) {
  if (s.experts <= 0) return;
  count_picks<<<expert_blocks(s), kExpertThreads, 0, stream>>>(counts, experts, s.tokens * s.topk);
  CUDA_CHECK_LAUNCH();
}

void moe_dispatch_forward(float* buffer, const float* x, const std::int32_t* experts, const std::int32_t* slots,
                          const MoeShape& s, cudaStream_t stream) {
  zero(buffer, s.experts * s.capacity * s.hidden, stream);
  const I64 n = s.tokens * s.topk * s.hidden;
  if (n <= 0) return;
  dispatch_fwd<<<blocks_for(n, kThreads), kThreads, 0, stream>>>(buffer, x, experts, slots, s.tokens * s.topk, s.topk,
                                                                 s.capacity, s.hidden);
  CUDA_CHECK_LAUNCH();
}

void moe_dispatch_backward(float* dx, const float* d_buffer, const std::int32_t* experts, const std::int32_t* slots,
                           const MoeShape& s, cudaStream_t stream) {
  moe_combine_forward(dx, d_buffer, experts, slots, nullptr, s, stream);  // the dispatch's transpose: gates 1
}

void moe_combine_forward(float* y, const float* expert_out, const std::int32_t* experts, const std::int32_t* slots,
                         const float* gates, const MoeShape& s, cudaStream_t stream) {
  const I64 n = s.tokens * s.hidden;
  if (n <= 0) return;
  sum_picks<<<blocks_for(n, kThreads), kThreads, 0, stream>>>(y, expert_out, experts, slots, gates, s.tokens, s.topk,
                                                              s.capacity, s.hidden);
  CUDA_CHECK_LAUNCH();
}

void moe_combine_backward(float* d_expert_out, float* d_gates, const float* d_y, const float* expert_out,
                          const std::int32_t* experts, const std::int32_t* slots, const float* gates,
                          const MoeShape& s, cudaStream_t stream) {
  zero(d_expert_out, s.experts * s.capacity * s.hidden, stream);
  const I64 picks = s.tokens * s.topk;
  if (picks <= 0) return;
  combine_bwd<<<blocks_for(picks * 32, kThreads), kThreads, 0, stream>>>(d_expert_out, d_gates, d_y, expert_out,
                                                                         experts, slots, gates, picks, s.topk,
                                                                         s.capacity, s.hidden);
  CUDA_CHECK_LAUNCH();
}

void moe_regroup(float* dst, const float* src, I64 ep, I64 local_experts, I64 capacity, I64 hidden, bool inverse,
                 cudaStream_t stream) {
  const I64 n = ep * local_experts * capacity * hidden;
  if (n <= 0) return;
  regroup<<<blocks_for(n, kThreads), kThreads, 0, stream>>>(dst, src, ep, local_experts, capacity * hidden, inverse);
  CUDA_CHECK_LAUNCH();
}

}  // namespace tandem::kernels::cuda
