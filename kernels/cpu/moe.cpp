#include "kernels/cpu/moe.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

namespace tandem::kernels::cpu {

namespace {

using I64 = std::int64_t;

std::size_t at(I64 i) { return static_cast<std::size_t>(i); }

// Each expert's picks among all tokens' picks (f_e of the load-balancing loss), and each
// expert's mean probability (P_e).
void balance_terms(const std::int32_t* experts, const float* probs, const MoeShape& s, std::vector<double>& f,
                   std::vector<double>& p) {
  f.assign(at(s.experts), 0.0);
  p.assign(at(s.experts), 0.0);
  for (I64 i = 0; i < s.tokens * s.topk; ++i) f[at(experts[i])] += 1.0;
  for (double& v : f) v /= static_cast<double>(s.tokens * s.topk);
  for (I64 t = 0; t < s.tokens; ++t)
    for (I64 e = 0; e < s.experts; ++e) p[at(e)] += probs[t * s.experts + e];
  for (double& v : p) v /= static_cast<double>(s.tokens);
}

// Each token's sum, over its picks that found a place, of the picked place's row of `buffer`
// weighted by its gate (1 without gates): the combine, and the dispatch's transpose.
void sum_picks(float* y, const float* buffer, const std::int32_t* experts, const std::int32_t* slots,
               const float* gates, const MoeShape& s) {
  const I64 h = s.hidden;
  std::fill(y, y + s.tokens * h, 0.0f);
  for (I64 p = 0; p < s.tokens * s.topk; ++p) {
    if (slots[p] < 0) continue;
    const float* row = buffer + (experts[p] * s.capacity + slots[p]) * h;
    const float weight = gates != nullptr ? gates[p] : 1.0f;
    float* out = y + (p / s.topk) * h;
    for (I64 j = 0; j < h; ++j) out[j] += weight * row[j];
  }
}

}  // namespace

void RouterLoad::add(const std::int32_t* experts, const MoeShape& s) {
  if (s.tokens <= 0 || s.experts <= 0) return;
  std::vector<I64> picks(at(s.experts), 0);
  for (I64 p = 0; p < s.tokens * s.topk; ++p) ++picks[at(experts[p])];
  const double mean = static_cast<double>(s.tokens * s.topk) / static_cast<double>(s.experts);
  const double ratio = static_cast<double>(*std::max_element(picks.begin(), picks.end())) / mean;
  ++routings;
  ratio_sum += ratio;
  ratio_max = std::max(ratio_max, ratio);
}

void RouterLoad::merge(const RouterLoad& other) {
  routings += other.routings;
  ratio_sum += other.ratio_sum;
  ratio_max = std::max(ratio_max, other.ratio_max);
}

void moe_route_forward(float* gates, std::int32_t* experts, std::int32_t* slots, float* probs, const float* logits,
                       const MoeShape& s) {
  const I64 E = s.experts, k = s.topk;
  std::vector<I64> order(at(E));
  for (I64 t = 0; t < s.tokens; ++t) {
    const float* l = logits + t * E;
    // The softmax over every expert (the load-balancing loss's probabilities).
    const float top = *std::max_element(l, l + E);
    double sum = 0;
    for (I64 e = 0; e < E; ++e) sum += std::exp(static_cast<double>(l[e] - top));
    for (I64 e = 0; e < E; ++e) probs[t * E + e] = static_cast<float>(std::exp(static_cast<double>(l[e] - top)) / sum);
    // The k largest logits, ties to the lower expert; the gates their softmax.
    std::iota(order.begin(), order.end(), I64{0});
    std::partial_sort(order.begin(), order.begin() + k, order.end(),
                      [l](I64 a, I64 b) { return l[a] > l[b] || (l[a] == l[b] && a < b); });
    double picked = 0;
    for (I64 i = 0; i < k; ++i) picked += std::exp(static_cast<double>(l[order[at(i)]] - top));
    for (I64 i = 0; i < k; ++i) {
      experts[t * k + i] = static_cast<std::int32_t>(order[at(i)]);
      gates[t * k + i] = static_cast<float>(std::exp(static_cast<double>(l[order[at(i)]] - top)) / picked);
    }
  }
  // Places in each expert's buffer: first picks of every token, then second picks, ...
  std::vector<I64> filled(at(E), 0);
  for (I64 i = 0; i < k; ++i)
    for (I64 t = 0; t < s.tokens; ++t) {
      I64& n = filled[at(experts[t * k + i])];
      slots[t * k + i] = n < s.capacity ? static_cast<std::int32_t>(n++) : -1;
    }
}

void moe_count(float* counts, const std::int32_t* experts, const MoeShape& s) {
  std::fill(counts, counts + s.experts, 0.0f);
  for (I64 i = 0; i < s.tokens * s.topk; ++i) counts[experts[i]] += 1.0f;
}

void moe_route_backward(float* d_logits, const float* gates, const std::int32_t* experts, const float* probs,
                        const float* d_gates, const MoeShape& s, float aux_loss_coeff, const float* counts,
                        std::int64_t balance_tokens) {
  const I64 E = s.experts, k = s.topk;
  std::fill(d_logits, d_logits + s.tokens * E, 0.0f);
  for (I64 t = 0; t < s.tokens; ++t) {
    // Softmax over the picks: dl_i = g_i (dg_i − Σ_j g_j dg_j).
    double dot = 0;
    for (I64 i = 0; i < k; ++i) dot += static_cast<double>(gates[t * k + i]) * d_gates[t * k + i];
    for (I64 i = 0; i < k; ++i)
      d_logits[t * E + experts[t * k + i]] +=
          static_cast<float>(gates[t * k + i] * (static_cast<double>(d_gates[t * k + i]) - dot));
  }
  if (aux_loss_coeff == 0) return;
  // d aux / d probs[t][e] = coeff·E·f_e / T (f_e counts picks: no gradient); then the softmax.
  std::vector<double> f, p;
  balance_terms(experts, probs, s, f, p);
  // The whole sequences' shares with `counts`; the gradient itself is this rank's part of a loss
  // that is a mean over its own tokens (the step divides by the context-parallel size, as it does
  // the language-model loss's), so the 1/T stays this routing's.
  const I64 all = counts != nullptr && balance_tokens > 0 ? balance_tokens : s.tokens;
  if (counts != nullptr)
    for (I64 e = 0; e < E; ++e) f[at(e)] = static_cast<double>(counts[e]) / static_cast<double>(all * k);
  const double scale = static_cast<double>(aux_loss_coeff) * static_cast<double>(E) / static_cast<double>(s.tokens);
  for (I64 t = 0; t < s.tokens; ++t) {
    const float* pr = probs + t * E;
    double dot = 0;
    for (I64 e = 0; e < E; ++e) dot += pr[e] * scale * f[at(e)];
    for (I64 e = 0; e < E; ++e) d_logits[t * E + e] += static_cast<float>(pr[e] * (scale * f[at(e)] - dot));
  }
}

double moe_load_balancing_loss(const std::int32_t* experts, const float* probs, const MoeShape& s,
                               float aux_loss_coeff) {
  std::vector<double> f, p;
  balance_terms(experts, probs, s, f, p);
  double sum = 0;
  for (I64 e = 0; e < s.experts; ++e) sum += f[at(e)] * p[at(e)];
  return static_cast<double>(aux_loss_coeff) * static_cast<double>(s.experts) * sum;
}

void moe_dispatch_forward(float* buffer, const float* x, const std::int32_t* experts, const std::int32_t* slots,
                          const MoeShape& s) {
  const I64 h = s.hidden;
  std::fill(buffer, buffer + s.experts * s.capacity * h, 0.0f);
  for (I64 p = 0; p < s.tokens * s.topk; ++p) {
    if (slots[p] < 0) continue;
    std::memcpy(buffer + (experts[p] * s.capacity + slots[p]) * h, x + (p / s.topk) * h, sizeof(float) * at(h));
  }
}

void moe_dispatch_backward(float* dx, const float* d_buffer, const std::int32_t* experts, const std::int32_t* slots,
                           const MoeShape& s) {
  sum_picks(dx, d_buffer, experts, slots, nullptr, s);
}

void moe_combine_forward(float* y, const float* expert_out, const std::int32_t* experts, const std::int32_t* slots,
                         const float* gates, const MoeShape& s) {
  sum_picks(y, expert_out, experts, slots, gates, s);
}

void moe_combine_backward(float* d_expert_out, float* d_gates, const float* d_y, const float* expert_out,
                          const std::int32_t* experts, const std::int32_t* slots, const float* gates,
                          const MoeShape& s) {
  const I64 h = s.hidden;
  std::fill(d_expert_out, d_expert_out + s.experts * s.capacity * h, 0.0f);
  for (I64 p = 0; p < s.tokens * s.topk; ++p) {
    d_gates[p] = 0;
    if (slots[p] < 0) continue;
    const I64 place = (experts[p] * s.capacity + slots[p]) * h;
    const float* dy = d_y + (p / s.topk) * h;
    double dot = 0;
    for (I64 j = 0; j < h; ++j) {
      d_expert_out[place + j] = gates[p] * dy[j];
      dot += static_cast<double>(expert_out[place + j]) * dy[j];
    }
    d_gates[p] = static_cast<float>(dot);
  }
}

void moe_regroup(float* dst, const float* src, std::int64_t ep, std::int64_t local_experts, std::int64_t capacity,
                 std::int64_t hidden, bool inverse) {
  const I64 block = capacity * hidden;
  for (I64 m = 0; m < ep; ++m)
    for (I64 e = 0; e < local_experts; ++e) {
      const I64 by_member = (m * local_experts + e) * block, by_expert = (e * ep + m) * block;
      std::memcpy(dst + (inverse ? by_member : by_expert), src + (inverse ? by_expert : by_member),
                  sizeof(float) * at(block));
    }
}

}  // namespace tandem::kernels::cpu
