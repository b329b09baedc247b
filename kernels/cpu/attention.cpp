#include "kernels/cpu/attention.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

#include "kernels/cpu/elementwise.hpp"
#include "kernels/cpu/gemm.hpp"
#include "strategies/op.hpp"

namespace tandem::kernels::cpu {
namespace {

using I64 = std::int64_t;

void check(const AttentionShape& s) {
  if (s.batch < 0 || s.seq < 0 || s.heads < 1 || s.kv_heads < 1 || s.head_dim < 1)
    throw std::invalid_argument("attention: batch, seq >= 0 and heads, kv_heads, head_dim >= 1");
  if (s.heads % s.kv_heads)
    throw std::invalid_argument("attention: kv_heads must divide heads");
}

// One (batch, head)'s Q, K and V: Q inside the packed qkv rows, K and V there too or, with
// context parallelism, in the separate kv tensor (K | V rows of the whole sequence).
struct HeadView {
  const float* q;
  I64 q_ld;
  const float* k;
  const float* v;
  I64 kv_ld;
  I64 q_col, k_col, v_col;  // the columns of q, k, v in their tensor's rows (for gradients)
};

HeadView head_view(const AttentionShape& s, const float* qkv, const float* kv, I64 b, I64 h) {
  const I64 d = s.head_dim, row = (s.heads + 2 * s.kv_heads) * d;
  const I64 g = h / (s.heads / s.kv_heads);
  const float* base = qkv + b * s.seq * row;
  if (kv == nullptr) {
    const I64 kc = (s.heads + g) * d, vc = (s.heads + s.kv_heads + g) * d;
    return HeadView{base + h * d, row, base + kc, base + vc, row, h * d, kc, vc};
  }
  const I64 kv_row = 2 * s.kv_heads * d, kv_seq = s.seq * s.cp_size;
  const float* kv_base = kv + b * kv_seq * kv_row;
  return HeadView{base + h * d, row, kv_base + g * d, kv_base + (s.kv_heads + g) * d, kv_row, h * d, g * d,
                  (s.kv_heads + g) * d};
}

// Where each query row and key row sits in the whole sequence (identity without context
// parallelism); score (i, j) is visible when the key does not come after the query.
struct Positions {
  std::vector<I64> q, k;
  bool causal;
  bool visible(I64 i, I64 j) const { return !causal || k[j] <= q[i]; }
};

Positions positions(const AttentionShape& s) {
  Positions p{std::vector<I64>(s.seq), std::vector<I64>(s.seq * s.cp_size), s.causal};
  for (I64 i = 0; i < s.seq; ++i) p.q[i] = zigzag_position(i, s.seq, s.cp_size, s.cp_rank);
  for (I64 j = 0; j < s.seq * s.cp_size; ++j)
    p.k[j] = zigzag_position(j % s.seq, s.seq, s.cp_size, static_cast<int>(j / s.seq));
  return p;
}

void check_context_parallel(const AttentionShape& s, const float* kv) {
  if (s.cp_size < 1 || s.cp_rank < 0 || s.cp_rank >= s.cp_size)
    throw std::invalid_argument("attention: cp_rank must be in [0, cp_size)");
  if (s.cp_size > 1 && (kv == nullptr || s.seq % 2))
    throw std::invalid_argument("attention: context parallelism needs the gathered K/V and an even local sequence");
}

// The dropout RNG index of score (i, j) of head bh: its place in the whole sequence's matrix.
std::uint64_t score_index(I64 bh, const Positions& at, I64 kv_seq, I64 i, I64 j) {
  return static_cast<std::uint64_t>((bh * kv_seq + at.q[i]) * kv_seq + at.k[j]);
}

}  // namespace

void attention_forward(float* out, float* lse, float* probs, std::uint8_t* mask, float* dropped,
                       const float* qkv, const AttentionShape& s, const AttentionDropout& drop, const float* kv) {
  check(s);
  check_context_parallel(s, kv);
  const I64 S = s.seq, T = s.seq * s.cp_size, D = s.head_dim, HD = s.heads * D;
  if (S == 0 || s.batch == 0) return;
  const Positions at = positions(s);
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  const bool dropout = drop.p > 0.0f;
  const float keep_scale = dropout ? 1.0f / (1.0f - drop.p) : 1.0f;
  std::vector<float> p(static_cast<std::size_t>(S * T));  // scores, then probabilities
  std::vector<float> pd(dropout ? static_cast<std::size_t>(S * T) : 0);  // after dropout

  for (I64 b = 0; b < s.batch; ++b) {
    for (I64 h = 0; h < s.heads; ++h) {
      const HeadView hv = head_view(s, qkv, kv, b, h);
      // Scores: P = scale · Q Kᵀ, [S, T]. The masked scores are computed and then dropped:
      // simpler than per-row GEMVs and this is a reference, not the fast path.
      sgemm(false, true, S, T, D, scale, hv.q, hv.q_ld, hv.k, hv.kv_ld, 0.0f, p.data(), T);
      const I64 bh = b * s.heads + h;
      for (I64 i = 0; i < S; ++i) {
        float* row = p.data() + i * T;
        float mx = -std::numeric_limits<float>::infinity();
        for (I64 j = 0; j < T; ++j)
          if (at.visible(i, j)) mx = std::max(mx, row[j]);
        double sum = 0.0;
        for (I64 j = 0; j < T; ++j) {
          row[j] = at.visible(i, j) ? std::exp(row[j] - mx) : 0.0f;
          sum += row[j];
        }
        const float inv = static_cast<float>(1.0 / sum);
        for (I64 j = 0; j < T; ++j) row[j] *= inv;
        if (lse) lse[bh * S + i] = mx + static_cast<float>(std::log(sum));
      }
      if (probs) std::memcpy(probs + bh * S * T, p.data(), sizeof(float) * S * T);
      const float* pv = p.data();
      if (dropout) {
        for (I64 i = 0; i < S; ++i)
          for (I64 j = 0; j < T; ++j) {
            const I64 e = i * T + j;
            const bool keep = dropout_keep(drop.key, score_index(bh, at, T, i, j), drop.p);
            if (mask) mask[bh * S * T + e] = keep ? 1 : 0;
            pd[e] = keep ? p[e] * keep_scale : 0.0f;
          }
        pv = pd.data();
      }
      if (dropped) std::memcpy(dropped + bh * S * T, pv, sizeof(float) * S * T);
      // O = P V, written straight into this head's columns of out [b, s, heads·d].
      sgemm(false, false, S, D, T, 1.0f, pv, T, hv.v, hv.kv_ld, 0.0f, out + b * S * HD + h * D, HD);
    }
  }
}

void attention_backward(float* d_qkv, const float* d_out, const float* qkv, const float* lse,
                        const float* probs, const std::uint8_t* mask, const AttentionShape& s,
                        const AttentionDropout& drop, const float* kv, float* d_kv) {
  check(s);
  check_context_parallel(s, kv);
  if (!probs && !lse)
    throw std::invalid_argument("attention_backward: needs the saved probs or logsumexp");
  if (kv != nullptr && d_kv == nullptr)
    throw std::invalid_argument("attention_backward: a separate K/V needs its gradient's buffer");
  const I64 S = s.seq, T = s.seq * s.cp_size, D = s.head_dim, HD = s.heads * D;
  const I64 row = (s.heads + 2 * s.kv_heads) * D, kv_row = 2 * s.kv_heads * D;
  if (S == 0 || s.batch == 0) return;
  std::fill(d_qkv, d_qkv + s.batch * S * row, 0.0f);  // K/V gradients accumulate over a group
  if (d_kv) std::fill(d_kv, d_kv + s.batch * T * kv_row, 0.0f);
  const Positions at = positions(s);
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  const bool dropout = drop.p > 0.0f || mask != nullptr;
  const float keep_scale = drop.p > 0.0f ? 1.0f / (1.0f - drop.p) : 1.0f;
  std::vector<float> p(static_cast<std::size_t>(S * T));   // probabilities
  std::vector<float> pd(static_cast<std::size_t>(S * T));  // after dropout
  std::vector<float> dp(static_cast<std::size_t>(S * T));  // dP, then dS

  for (I64 b = 0; b < s.batch; ++b) {
    for (I64 h = 0; h < s.heads; ++h) {
      const HeadView hv = head_view(s, qkv, kv, b, h);
      // Gradients land where their operands came from: dQ in d_qkv, dK/dV in d_kv or d_qkv.
      float* dq = d_qkv + b * S * row + hv.q_col;
      float* dkv_base = kv ? d_kv + b * T * kv_row : d_qkv + b * S * row;
      float* dk = dkv_base + hv.k_col;
      float* dv = dkv_base + hv.v_col;
      const I64 bh = b * s.heads + h;
      // P: saved, or recomputed from the logsumexp: P = exp(scale·QKᵀ - lse) on visible keys.
      if (probs) {
        std::memcpy(p.data(), probs + bh * S * T, sizeof(float) * S * T);
      } else {
        sgemm(false, true, S, T, D, scale, hv.q, hv.q_ld, hv.k, hv.kv_ld, 0.0f, p.data(), T);
        for (I64 i = 0; i < S; ++i) {
          const float l = lse[bh * S + i];
          float* r = p.data() + i * T;
          for (I64 j = 0; j < T; ++j) r[j] = at.visible(i, j) ? std::exp(r[j] - l) : 0.0f;
        }
      }
      // The dropout mask as a per-element factor: keep/(1-p).
      const float* pv = p.data();
      if (dropout) {
        for (I64 i = 0; i < S; ++i)
          for (I64 j = 0; j < T; ++j) {
            const I64 e = i * T + j;
            const bool keep = mask ? mask[bh * S * T + e] != 0
                                   : dropout_keep(drop.key, score_index(bh, at, T, i, j), drop.p);
            pd[e] = keep ? keep_scale : 0.0f;  // the factor for now; P·factor below
          }
      }
      const float* dO = d_out + b * S * HD + h * D;
      // dP_dropped = dO Vᵀ  [S, T]
      sgemm(false, true, S, T, D, 1.0f, dO, HD, hv.v, hv.kv_ld, 0.0f, dp.data(), T);
      if (dropout) {
        for (I64 e = 0; e < S * T; ++e) {
          dp[e] *= pd[e];          // back through dropout: dP = dP_dropped · factor
          pd[e] *= p[e];           // the matrix the forward multiplied V with
        }
        pv = pd.data();
      }
      const I64 g_ld = kv ? kv_row : row;
      // dV_g += P_droppedᵀ dO
      sgemm(true, false, T, D, S, 1.0f, pv, T, dO, HD, 1.0f, dv, g_ld);
      // Softmax backward: dS_ij = P_ij · (dP_ij − Σ_k P_ik dP_ik). Masked entries have P = 0.
      for (I64 i = 0; i < S; ++i) {
        const float* pr = p.data() + i * T;
        float* dr = dp.data() + i * T;
        double dot = 0.0;
        for (I64 j = 0; j < T; ++j) dot += static_cast<double>(pr[j]) * dr[j];
        const float df = static_cast<float>(dot);
        for (I64 j = 0; j < T; ++j) dr[j] = pr[j] * (dr[j] - df);
      }
      // S = scale·QKᵀ: dQ = scale·dS K, dK_g += scale·dSᵀ Q.
      sgemm(false, false, S, D, T, scale, dp.data(), T, hv.k, hv.kv_ld, 1.0f, dq, row);
      sgemm(true, false, T, D, S, scale, dp.data(), T, hv.q, hv.q_ld, 1.0f, dk, g_ld);
    }
  }
}

}  // namespace tandem::kernels::cpu
