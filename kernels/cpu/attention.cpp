#include "kernels/cpu/attention.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

#include "kernels/cpu/elementwise.hpp"
#include "kernels/cpu/gemm.hpp"

namespace tandem::kernels::cpu {
namespace {

using I64 = std::int64_t;

void check(const AttentionShape& s) {
  if (s.batch < 0 || s.seq < 0 || s.heads < 1 || s.kv_heads < 1 || s.head_dim < 1)
    throw std::invalid_argument("attention: batch, seq >= 0 and heads, kv_heads, head_dim >= 1");
  if (s.heads % s.kv_heads)
    throw std::invalid_argument("attention: kv_heads must divide heads");
}

// Pointers to one (batch, head)'s Q, K and V inside the packed qkv row layout.
struct HeadView {
  I64 row;  // leading dimension of qkv: (heads + 2·kv_heads)·d
  I64 q, k, v;  // element offsets of this head's Q, K, V in the batch's first token row
};

HeadView head_view(const AttentionShape& s, I64 h) {
  const I64 d = s.head_dim;
  const I64 g = h / (s.heads / s.kv_heads);
  return HeadView{(s.heads + 2 * s.kv_heads) * d, h * d, (s.heads + g) * d,
                  (s.heads + s.kv_heads + g) * d};
}

}  // namespace

void attention_forward(float* out, float* lse, float* probs, std::uint8_t* mask, float* dropped,
                       const float* qkv, const AttentionShape& s, const AttentionDropout& drop) {
  check(s);
  const I64 S = s.seq, D = s.head_dim, HD = s.heads * D;
  if (S == 0 || s.batch == 0) return;
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  const bool dropout = drop.p > 0.0f;
  const float keep_scale = dropout ? 1.0f / (1.0f - drop.p) : 1.0f;
  std::vector<float> p(static_cast<std::size_t>(S * S));  // scores, then probabilities
  std::vector<float> pd(dropout ? static_cast<std::size_t>(S * S) : 0);  // after dropout

  for (I64 b = 0; b < s.batch; ++b) {
    for (I64 h = 0; h < s.heads; ++h) {
      const HeadView hv = head_view(s, h);
      const float* base = qkv + b * S * hv.row;
      // Scores: P = scale · Q Kᵀ, [S, S]. The causal upper triangle is computed and then masked:
      // simpler than per-row GEMVs and this is a reference, not the fast path.
      sgemm(false, true, S, S, D, scale, base + hv.q, hv.row, base + hv.k, hv.row, 0.0f, p.data(),
            S);
      const I64 bh = b * s.heads + h;
      for (I64 i = 0; i < S; ++i) {
        float* row = p.data() + i * S;
        const I64 last = s.causal ? i : S - 1;  // keys 0..last are visible
        float mx = -std::numeric_limits<float>::infinity();
        for (I64 j = 0; j <= last; ++j) mx = std::max(mx, row[j]);
        double sum = 0.0;
        for (I64 j = 0; j <= last; ++j) {
          row[j] = std::exp(row[j] - mx);
          sum += row[j];
        }
        const float inv = static_cast<float>(1.0 / sum);
        for (I64 j = 0; j <= last; ++j) row[j] *= inv;
        for (I64 j = last + 1; j < S; ++j) row[j] = 0.0f;
        if (lse) lse[bh * S + i] = mx + static_cast<float>(std::log(sum));
      }
      if (probs) std::memcpy(probs + bh * S * S, p.data(), sizeof(float) * S * S);
      const float* pv = p.data();
      if (dropout) {
        const std::uint64_t first = static_cast<std::uint64_t>(bh * S * S);
        for (I64 e = 0; e < S * S; ++e) {
          const bool keep = dropout_keep(drop.key, first + static_cast<std::uint64_t>(e), drop.p);
          if (mask) mask[bh * S * S + e] = keep ? 1 : 0;
          pd[e] = keep ? p[e] * keep_scale : 0.0f;
        }
        pv = pd.data();
      }
      if (dropped) std::memcpy(dropped + bh * S * S, pv, sizeof(float) * S * S);
      // O = P V, written straight into this head's columns of out [b, s, heads·d].
      sgemm(false, false, S, D, S, 1.0f, pv, S, base + hv.v, hv.row, 0.0f,
            out + b * S * HD + h * D, HD);
    }
  }
}

void attention_backward(float* d_qkv, const float* d_out, const float* qkv, const float* lse,
                        const float* probs, const std::uint8_t* mask, const AttentionShape& s,
                        const AttentionDropout& drop) {
  check(s);
  if (!probs && !lse)
    throw std::invalid_argument("attention_backward: needs the saved probs or logsumexp");
  const I64 S = s.seq, D = s.head_dim, HD = s.heads * D;
  const I64 row = (s.heads + 2 * s.kv_heads) * D;
  if (S == 0 || s.batch == 0) return;
  std::fill(d_qkv, d_qkv + s.batch * S * row, 0.0f);  // K/V gradients accumulate over a group
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  const bool dropout = drop.p > 0.0f || mask != nullptr;
  const float keep_scale = drop.p > 0.0f ? 1.0f / (1.0f - drop.p) : 1.0f;
  std::vector<float> p(static_cast<std::size_t>(S * S));   // probabilities
  std::vector<float> pd(static_cast<std::size_t>(S * S));  // after dropout
  std::vector<float> dp(static_cast<std::size_t>(S * S));  // dP, then dS

  for (I64 b = 0; b < s.batch; ++b) {
    for (I64 h = 0; h < s.heads; ++h) {
      const HeadView hv = head_view(s, h);
      const float* base = qkv + b * S * row;
      float* dbase = d_qkv + b * S * row;
      const I64 bh = b * s.heads + h;
      // P: saved, or recomputed from the logsumexp: P = exp(scale·QKᵀ - lse) on visible keys.
      if (probs) {
        std::memcpy(p.data(), probs + bh * S * S, sizeof(float) * S * S);
      } else {
        sgemm(false, true, S, S, D, scale, base + hv.q, row, base + hv.k, row, 0.0f, p.data(), S);
        for (I64 i = 0; i < S; ++i) {
          const I64 last = s.causal ? i : S - 1;
          const float l = lse[bh * S + i];
          float* r = p.data() + i * S;
          for (I64 j = 0; j <= last; ++j) r[j] = std::exp(r[j] - l);
          for (I64 j = last + 1; j < S; ++j) r[j] = 0.0f;
        }
      }
      // The dropout mask as a per-element factor: keep/(1-p).
      const float* pv = p.data();
      if (dropout) {
        const std::uint64_t first = static_cast<std::uint64_t>(bh * S * S);
        for (I64 e = 0; e < S * S; ++e) {
          const bool keep = mask ? mask[bh * S * S + e] != 0
                                 : dropout_keep(drop.key, first + static_cast<std::uint64_t>(e),
                                                drop.p);
          pd[e] = keep ? keep_scale : 0.0f;  // the factor for now; P·factor below
        }
      }
      const float* dO = d_out + b * S * HD + h * D;
      // dP_dropped = dO Vᵀ  [S, S]
      sgemm(false, true, S, S, D, 1.0f, dO, HD, base + hv.v, row, 0.0f, dp.data(), S);
      if (dropout) {
        for (I64 e = 0; e < S * S; ++e) {
          dp[e] *= pd[e];          // back through dropout: dP = dP_dropped · factor
          pd[e] *= p[e];           // the matrix the forward multiplied V with
        }
        pv = pd.data();
      }
      // dV_g += P_droppedᵀ dO
      sgemm(true, false, S, D, S, 1.0f, pv, S, dO, HD, 1.0f, dbase + hv.v, row);
      // Softmax backward: dS_ij = P_ij · (dP_ij − Σ_k P_ik dP_ik). Masked entries have P = 0.
      for (I64 i = 0; i < S; ++i) {
        const float* pr = p.data() + i * S;
        float* dr = dp.data() + i * S;
        double dot = 0.0;
        for (I64 j = 0; j < S; ++j) dot += static_cast<double>(pr[j]) * dr[j];
        const float df = static_cast<float>(dot);
        for (I64 j = 0; j < S; ++j) dr[j] = pr[j] * (dr[j] - df);
      }
      // S = scale·QKᵀ: dQ = scale·dS K, dK_g += scale·dSᵀ Q.
      sgemm(false, false, S, D, S, scale, dp.data(), S, base + hv.k, row, 1.0f, dbase + hv.q, row);
      sgemm(true, false, S, D, S, scale, dp.data(), S, base + hv.q, row, 1.0f, dbase + hv.k, row);
    }
  }
}

}  // namespace tandem::kernels::cpu
