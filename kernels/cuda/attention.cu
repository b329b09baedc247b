#include "kernels/cuda/attention.cuh"

#include <cmath>
#include <stdexcept>

#include "kernels/cuda/check.hpp"
#include "kernels/cuda/reduce.cuh"
#include "kernels/cuda/rng.cuh"

namespace tandem::kernels::cuda {
namespace {

using I64 = std::int64_t;
constexpr int kThreads = 256;

void check(const AttentionShape& s, const float* kv) {
  if (s.batch < 0 || s.seq < 0 || s.heads < 1 || s.kv_heads < 1 || s.head_dim < 1)
    throw std::invalid_argument("attention: batch, seq >= 0 and heads, kv_heads, head_dim >= 1");
  if (s.heads % s.kv_heads) throw std::invalid_argument("attention: kv_heads must divide heads");
  if (s.cp_size < 1 || s.cp_rank < 0 || s.cp_rank >= s.cp_size)
    throw std::invalid_argument("attention: cp_rank must be in [0, cp_size)");
  if (s.cp_size > 1 && (kv == nullptr || s.seq % 2))
    throw std::invalid_argument("attention: context parallelism needs the gathered K/V and an even local sequence");
}

// Where query row i and key row j sit in the whole sequence (identity without context
// parallelism), which scores are visible, and each score's dropout RNG index: its place in the
// whole sequence's [T, T] matrix of head bh (kernels/cpu/attention.cpp's score_index).
struct Positions {
  I64 S, T;  // query rows, key rows (T = cp·S)
  int cp, rank;
  bool causal;
  __device__ I64 q(I64 i) const { return zigzag_position_hd(i, S, cp, rank); }
  __device__ I64 k(I64 j) const { return zigzag_position_hd(j % S, S, cp, static_cast<int>(j / S)); }
  __device__ bool visible(I64 qp, I64 kp) const { return !causal || kp <= qp; }
  __device__ std::uint64_t index(I64 bh, I64 qp, I64 kp) const {
    return static_cast<std::uint64_t>((bh * T + qp) * T + kp);
  }
};

// Row r of one batch entry's [heads, S, T] block: head r / S, query r % S; bh0 = b·heads.
//
// Forward softmax: scores (already scaled) -> probabilities in place (masked entries 0), the
// logsumexp, and with dropout the dropped matrix (and the stored mask when asked).
__global__ void softmax_fwd(float* p, float* lse, std::uint8_t* mask, float* dropped, Positions at, float drop_p,
                            std::uint64_t key, I64 bh0) {
  __shared__ float scratch[32];
  const I64 T = at.T, r = blockIdx.x, bh = bh0 + r / at.S, qp = at.q(r % at.S);
  float* row = p + r * T;
  float mx = -FLT_MAX;
  for (I64 j = threadIdx.x; j < T; j += blockDim.x)
    if (at.visible(qp, at.k(j))) mx = fmaxf(mx, row[j]);
  mx = block_max(mx, scratch);
  float sum = 0.0f;
  for (I64 j = threadIdx.x; j < T; j += blockDim.x)
    if (at.visible(qp, at.k(j))) sum += expf(row[j] - mx);
  sum = block_sum(sum, scratch);
  const float inv = 1.0f / sum;
  const float keep_scale = drop_p > 0.0f ? 1.0f / (1.0f - drop_p) : 1.0f;
  for (I64 j = threadIdx.x; j < T; j += blockDim.x) {
    const I64 kp = at.k(j);
    const float v = at.visible(qp, kp) ? expf(row[j] - mx) * inv : 0.0f;
    row[j] = v;
    if (drop_p > 0.0f) {
      const bool keep = dropout_keep(key, at.index(bh, qp, kp), drop_p);
      if (mask) mask[r * T + j] = keep ? 1 : 0;
      dropped[r * T + j] = keep ? v * keep_scale : 0.0f;
    }
  }
  if (lse && threadIdx.x == 0) lse[r] = mx + logf(sum);
}

// Recomputes probabilities from scaled scores and the saved logsumexp.
__global__ void probs_from_lse(float* p, const float* lse, Positions at) {
  const I64 T = at.T, r = blockIdx.x, qp = at.q(r % at.S);
  const float l = lse[r];
  for (I64 j = threadIdx.x; j < T; j += blockDim.x)
    p[r * T + j] = at.visible(qp, at.k(j)) ? expf(p[r * T + j] - l) : 0.0f;
}

// dp holds dP_dropped = dO·Vᵀ. Through dropout: dP = dP_dropped·factor and (when pd is not
// null) pd = P·factor, the matrix the forward multiplied V with; then the softmax backward
// dS = P·(dP − Σ_k P·dP) in place of dp.
__global__ void softmax_bwd(float* dp, float* pd, const float* p, const std::uint8_t* mask, Positions at, float drop_p,
                            bool dropout, std::uint64_t key, I64 bh0) {
  __shared__ float scratch[32];
  const I64 T = at.T, r = blockIdx.x, bh = bh0 + r / at.S, qp = at.q(r % at.S);
  const float keep_scale = drop_p > 0.0f ? 1.0f / (1.0f - drop_p) : 1.0f;
  float dot = 0.0f;
  for (I64 j = threadIdx.x; j < T; j += blockDim.x) {
    const I64 e = r * T + j;
    float d = dp[e];
    if (dropout) {
      const bool keep = mask ? mask[e] != 0 : dropout_keep(key, at.index(bh, qp, at.k(j)), drop_p);
      const float f = keep ? keep_scale : 0.0f;
      d *= f;
      dp[e] = d;
      if (pd) pd[e] = p[e] * f;
    }
    dot += p[e] * d;
  }
  dot = block_sum(dot, scratch);
  for (I64 j = threadIdx.x; j < T; j += blockDim.x) {
    const I64 e = r * T + j;
    dp[e] = p[e] * (dp[e] - dot);
  }
}

// The strided views of one batch entry: query heads h = g·G + j for g over the KV groups, at a
// fixed position j in the group (G = heads / kv_heads). K and V are the K|V columns of qkv's rows
// or, with context parallelism, the separate kv's rows (T of them per batch entry).
struct Views {
  I64 S, T, D, H, KV, G, row, HD, kv_ld;
  bool separate;  // K/V in the gathered kv tensor
  Positions at;
  explicit Views(const AttentionShape& s)
      : S(s.seq), T(s.seq * s.cp_size), D(s.head_dim), H(s.heads), KV(s.kv_heads), G(s.heads / s.kv_heads),
        row((s.heads + 2 * s.kv_heads) * s.head_dim), HD(s.heads * s.head_dim),
        kv_ld(s.cp_size > 1 ? 2 * s.kv_heads * s.head_dim : row), separate(s.cp_size > 1),
        at{S, T, s.cp_size, s.cp_rank, s.causal} {}
  I64 q(I64 j) const { return j * D; }                      // column of head j's Q; next group: + G·D
  I64 k() const { return separate ? 0 : H * D; }            // column of group 0's K; next group: + D
  I64 v() const { return separate ? KV * D : (H + KV) * D; }  // column of group 0's V
  I64 block(I64 j) const { return j * S * T; }              // head j's [S, T] in the block; next group: + G·S·T
  I64 block_n() const { return H * S * T; }
  // Batch entry b's rows of qkv (or d_qkv) and of the K/V source (or its gradient).
  template <typename F>
  F* qkv_rows(F* qkv, I64 b) const { return qkv + b * S * row; }
  template <typename F>
  F* kv_rows(F* qkv, F* kv, I64 b) const { return separate ? kv + b * T * kv_ld : qkv_rows(qkv, b); }
};

// C (m x n per group) = alpha · op(A) · op(B) + beta · C batched over the KV groups.
void product(Blas& blas, bool ta, bool tb, I64 m, I64 n, I64 k, float alpha, const float* a, I64 lda, I64 sa,
             const float* b, I64 ldb, I64 sb, float beta, float* c, I64 ldc, I64 sc, I64 groups, cudaStream_t stream) {
  GemmShape g;
  g.trans_a = ta;
  g.trans_b = tb;
  g.m = m;
  g.n = n;
  g.k = k;
  g.lda = lda;
  g.ldb = ldb;
  g.ldc = ldc;
  g.stride_a = sa;
  g.stride_b = sb;
  g.stride_c = sc;
  g.batch = groups;
  blas.gemm(g, alpha, a, b, beta, c, stream);
}

// blk [H, S, T] = alpha · A·Bᵀ per head: A's head j at a + q(j) (leading dimension lda, next
// group + G·D), B the group's K or V at kvb + col (kv_ld, next group + D). The scaled scores
// (A = Q, B = K) and the backward's dO·Vᵀ.
void per_head_abt(Blas& blas, const Views& w, const float* a, I64 lda, const float* kvb, I64 col, float* blk,
                  float alpha, cudaStream_t stream) {
  for (I64 j = 0; j < w.G; ++j)
    product(blas, false, true, w.S, w.T, w.D, alpha, a + w.q(j), lda, w.G * w.D, kvb + col, w.kv_ld, w.D, 0.0f,
            blk + w.block(j), w.T, w.G * w.S * w.T, w.KV, stream);
}

}  // namespace

void attention_forward(Blas& blas, float* out, float* lse, float* probs, std::uint8_t* mask, float* dropped,
                       const float* qkv, const AttentionShape& s, const AttentionDropout& drop,
                       const Workspace& workspace, cudaStream_t stream, const float* kv) {
  check(s, kv);
  if (s.seq == 0 || s.batch == 0) return;
  const Views w(s);
  const I64 blk_n = w.block_n();
  const bool dropout = drop.p > 0.0f;
  // Scratch: the probabilities (unless saved) and the dropped matrix (unless saved).
  const std::size_t need = sizeof(float) * static_cast<std::size_t>(blk_n) * ((probs ? 0 : 1) + (dropout && !dropped ? 1 : 0));
  float* scratch = need ? static_cast<float*>(workspace(need)) : nullptr;
  const float scale = 1.0f / std::sqrt(static_cast<float>(w.D));
  for (I64 b = 0; b < s.batch; ++b) {
    const float* base = w.qkv_rows(qkv, b);
    const float* kvb = w.kv_rows(qkv, kv, b);
    float* p = probs ? probs + b * blk_n : scratch;
    float* pd = dropout ? (dropped ? dropped + b * blk_n : scratch + (probs ? 0 : blk_n)) : p;
    per_head_abt(blas, w, base, w.row, kvb, w.k(), p, scale, stream);
    softmax_fwd<<<static_cast<unsigned>(w.H * w.S), kThreads, 0, stream>>>(
        p, lse ? lse + b * w.H * w.S : nullptr, mask ? mask + b * blk_n : nullptr, pd, w.at, dropout ? drop.p : 0.0f,
        drop.key, b * w.H);
    CUDA_CHECK_LAUNCH();
    for (I64 j = 0; j < w.G; ++j)  // O = P_dropped · V into each head's columns of out
      product(blas, false, false, w.S, w.D, w.T, 1.0f, pd + w.block(j), w.T, w.G * w.S * w.T, kvb + w.v(), w.kv_ld,
              w.D, 0.0f, out + b * w.S * w.HD + w.q(j), w.HD, w.G * w.D, w.KV, stream);
  }
}

void attention_backward(Blas& blas, float* d_qkv, const float* d_out, const float* qkv, const float* lse,
                        const float* probs, const std::uint8_t* mask, const AttentionShape& s,
                        const AttentionDropout& drop, const Workspace& workspace, cudaStream_t stream,
                        const float* kv, float* d_kv) {
  check(s, kv);
  if (!probs && !lse) throw std::invalid_argument("attention_backward: needs the saved probs or logsumexp");
  if (s.cp_size > 1 && d_kv == nullptr)
    throw std::invalid_argument("attention_backward: a separate K/V needs its gradient's buffer");
  if (s.seq == 0 || s.batch == 0) return;
  const Views w(s);
  // K/V gradients accumulate over a group's query heads: both outputs start from 0.
  CUDA_CHECK(cudaMemsetAsync(d_qkv, 0, sizeof(float) * s.batch * w.S * w.row, stream));
  if (w.separate) CUDA_CHECK(cudaMemsetAsync(d_kv, 0, sizeof(float) * s.batch * w.T * w.kv_ld, stream));
  const I64 blk_n = w.block_n();
  const bool dropout = drop.p > 0.0f || mask != nullptr;
  // Scratch: dP always, P when recomputed, P·factor with dropout.
  const std::size_t blocks = 1 + (probs ? 0 : 1) + (dropout ? 1 : 0);
  float* scratch = static_cast<float*>(workspace(sizeof(float) * static_cast<std::size_t>(blk_n) * blocks));
  float* dp = scratch;
  float* p_buf = probs ? nullptr : scratch + blk_n;
  float* pd_buf = dropout ? scratch + (blocks - 1) * blk_n : nullptr;
  const float scale = 1.0f / std::sqrt(static_cast<float>(w.D));
  const I64 sb = w.G * w.S * w.T;  // next group's block in the scores
  for (I64 b = 0; b < s.batch; ++b) {
    const float* base = w.qkv_rows(qkv, b);
    const float* kvb = w.kv_rows(qkv, kv, b);
    float* dbase = w.qkv_rows(d_qkv, b);
    float* dkvb = w.kv_rows(d_qkv, d_kv, b);
    const float* dO = d_out + b * w.S * w.HD;
    const float* p = probs ? probs + b * blk_n : p_buf;
    if (!probs) {
      per_head_abt(blas, w, base, w.row, kvb, w.k(), p_buf, scale, stream);
      probs_from_lse<<<static_cast<unsigned>(w.H * w.S), kThreads, 0, stream>>>(p_buf, lse + b * w.H * w.S, w.at);
      CUDA_CHECK_LAUNCH();
    }
    per_head_abt(blas, w, dO, w.HD, kvb, w.v(), dp, 1.0f, stream);  // dP_dropped = dO · Vᵀ
    softmax_bwd<<<static_cast<unsigned>(w.H * w.S), kThreads, 0, stream>>>(
        dp, pd_buf, p, mask ? mask + b * blk_n : nullptr, w.at, drop.p, dropout, drop.key, b * w.H);
    CUDA_CHECK_LAUNCH();
    const float* pv = dropout ? pd_buf : p;
    for (I64 j = 0; j < w.G; ++j) {
      // dV_g += P_droppedᵀ · dO
      product(blas, true, false, w.T, w.D, w.S, 1.0f, pv + w.block(j), w.T, sb, dO + w.q(j), w.HD, w.G * w.D, 1.0f,
              dkvb + w.v(), w.kv_ld, w.D, w.KV, stream);
      // dQ = scale · dS · K
      product(blas, false, false, w.S, w.D, w.T, scale, dp + w.block(j), w.T, sb, kvb + w.k(), w.kv_ld, w.D, 1.0f,
              dbase + w.q(j), w.row, w.G * w.D, w.KV, stream);
      // dK_g += scale · dSᵀ · Q
      product(blas, true, false, w.T, w.D, w.S, scale, dp + w.block(j), w.T, sb, base + w.q(j), w.row, w.G * w.D,
              1.0f, dkvb + w.k(), w.kv_ld, w.D, w.KV, stream);
    }
  }
}

}  // namespace tandem::kernels::cuda
