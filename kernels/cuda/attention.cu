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

void check(const AttentionShape& s) {
  if (s.batch < 0 || s.seq < 0 || s.heads < 1 || s.kv_heads < 1 || s.head_dim < 1)
    throw std::invalid_argument("attention: batch, seq >= 0 and heads, kv_heads, head_dim >= 1");
  if (s.heads % s.kv_heads) throw std::invalid_argument("attention: kv_heads must divide heads");
}

// Row r of one batch entry's [heads, S, S] block: head r / S, query r % S. `first` is the RNG
// index of the block's first element ((b·heads)·S·S).
//
// Forward softmax: scores (already scaled) -> probabilities in place (masked entries 0), the
// logsumexp, and with dropout the dropped matrix (and the stored mask when asked).
__global__ void softmax_fwd(float* p, float* lse, std::uint8_t* mask, float* dropped, I64 S, bool causal, float drop_p,
                            std::uint64_t key, std::uint64_t first) {
  __shared__ float scratch[32];
  const I64 r = blockIdx.x, i = r % S;
  float* row = p + r * S;
  const I64 visible = causal ? i + 1 : S;
  float mx = -FLT_MAX;
  for (I64 j = threadIdx.x; j < visible; j += blockDim.x) mx = fmaxf(mx, row[j]);
  mx = block_max(mx, scratch);
  float sum = 0.0f;
  for (I64 j = threadIdx.x; j < visible; j += blockDim.x) sum += expf(row[j] - mx);
  sum = block_sum(sum, scratch);
  const float inv = 1.0f / sum;
  const float keep_scale = drop_p > 0.0f ? 1.0f / (1.0f - drop_p) : 1.0f;
  for (I64 j = threadIdx.x; j < S; j += blockDim.x) {
    const float v = j < visible ? expf(row[j] - mx) * inv : 0.0f;
    row[j] = v;
    if (drop_p > 0.0f) {
      const bool keep = dropout_keep(key, first + static_cast<std::uint64_t>(r * S + j), drop_p);
      if (mask) mask[r * S + j] = keep ? 1 : 0;
      dropped[r * S + j] = keep ? v * keep_scale : 0.0f;
    }
  }
  if (lse && threadIdx.x == 0) lse[r] = mx + logf(sum);
}

// Recomputes probabilities from scaled scores and the saved logsumexp.
__global__ void probs_from_lse(float* p, const float* lse, I64 S, bool causal) {
  const I64 r = blockIdx.x, i = r % S;
  const I64 visible = causal ? i + 1 : S;
  const float l = lse[r];
  for (I64 j = threadIdx.x; j < S; j += blockDim.x) p[r * S + j] = j < visible ? expf(p[r * S + j] - l) : 0.0f;
}

// dp holds dP_dropped = dO·Vᵀ. Through dropout: dP = dP_dropped·factor and (when pd is not
// null) pd = P·factor, the matrix the forward multiplied V with; then the softmax backward
// dS = P·(dP − Σ_k P·dP) in place of dp.
__global__ void softmax_bwd(float* dp, float* pd, const float* p, const std::uint8_t* mask, I64 S, float drop_p,
                            bool dropout, std::uint64_t key, std::uint64_t first) {
  __shared__ float scratch[32];
  const I64 r = blockIdx.x;
  const float keep_scale = drop_p > 0.0f ? 1.0f / (1.0f - drop_p) : 1.0f;
  float dot = 0.0f;
  for (I64 j = threadIdx.x; j < S; j += blockDim.x) {
    const I64 e = r * S + j;
    float d = dp[e];
    if (dropout) {
      const bool keep = mask ? mask[e] != 0 : dropout_keep(key, first + static_cast<std::uint64_t>(e), drop_p);
      const float f = keep ? keep_scale : 0.0f;
      d *= f;
      dp[e] = d;
      if (pd) pd[e] = p[e] * f;
    }
    dot += p[e] * d;
  }
  dot = block_sum(dot, scratch);
  for (I64 j = threadIdx.x; j < S; j += blockDim.x) {
    const I64 e = r * S + j;
    dp[e] = p[e] * (dp[e] - dot);
  }
}

// The strided views of one batch entry: query heads h = g·G + j for g over the KV groups, at a
// fixed position j in the group (G = heads / kv_heads).
struct Views {
  I64 S, D, H, KV, G, row, HD;
  explicit Views(const AttentionShape& s)
      : S(s.seq), D(s.head_dim), H(s.heads), KV(s.kv_heads), G(s.heads / s.kv_heads),
        row((s.heads + 2 * s.kv_heads) * s.head_dim), HD(s.heads * s.head_dim) {}
  I64 q(I64 j) const { return j * D; }              // column of head j's Q; next group: + G·D
  I64 k() const { return H * D; }                   // column of group 0's K; next group: + D
  I64 v() const { return (H + KV) * D; }            // column of group 0's V
  I64 block(I64 j) const { return j * S * S; }      // head j's [S, S] in the block; next group: + G·S·S
};

// C (S x n per group) = alpha · op(A) · op(B) + beta · C batched over the KV groups.
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

// Scaled scores of batch entry `base` for every head into blk ([H, S, S]).
void scores(Blas& blas, const Views& w, const float* base, float* blk, float scale, cudaStream_t stream) {
  for (I64 j = 0; j < w.G; ++j)
    product(blas, false, true, w.S, w.S, w.D, scale, base + w.q(j), w.row, w.G * w.D, base + w.k(), w.row, w.D, 0.0f,
            blk + w.block(j), w.S, w.G * w.S * w.S, w.KV, stream);
}

}  // namespace

void attention_forward(Blas& blas, float* out, float* lse, float* probs, std::uint8_t* mask, float* dropped,
                       const float* qkv, const AttentionShape& s, const AttentionDropout& drop,
                       const Workspace& workspace, cudaStream_t stream) {
  check(s);
  if (s.seq == 0 || s.batch == 0) return;
  const Views w(s);
  const I64 blk_n = w.H * w.S * w.S;
  const bool dropout = drop.p > 0.0f;
  // Scratch: the probabilities (unless saved) and the dropped matrix (unless saved).
  const std::size_t need = sizeof(float) * static_cast<std::size_t>(blk_n) * ((probs ? 0 : 1) + (dropout && !dropped ? 1 : 0));
  float* scratch = need ? static_cast<float*>(workspace(need)) : nullptr;
  const float scale = 1.0f / std::sqrt(static_cast<float>(w.D));
  for (I64 b = 0; b < s.batch; ++b) {
    const float* base = qkv + b * w.S * w.row;
    float* p = probs ? probs + b * blk_n : scratch;
    float* pd = dropout ? (dropped ? dropped + b * blk_n : scratch + (probs ? 0 : blk_n)) : p;
    scores(blas, w, base, p, scale, stream);
    softmax_fwd<<<static_cast<unsigned>(w.H * w.S), kThreads, 0, stream>>>(
        p, lse ? lse + b * w.H * w.S : nullptr, mask ? mask + b * blk_n : nullptr, pd, w.S, s.causal,
        dropout ? drop.p : 0.0f, drop.key, static_cast<std::uint64_t>(b * blk_n));
    CUDA_CHECK_LAUNCH();
    for (I64 j = 0; j < w.G; ++j)  // O = P_dropped · V into each head's columns of out
      product(blas, false, false, w.S, w.D, w.S, 1.0f, pd + w.block(j), w.S, w.G * w.S * w.S, base + w.v(), w.row,
              w.D, 0.0f, out + b * w.S * w.HD + w.q(j), w.HD, w.G * w.D, w.KV, stream);
  }
}

void attention_backward(Blas& blas, float* d_qkv, const float* d_out, const float* qkv, const float* lse,
                        const float* probs, const std::uint8_t* mask, const AttentionShape& s,
                        const AttentionDropout& drop, const Workspace& workspace, cudaStream_t stream) {
  check(s);
  if (!probs && !lse) throw std::invalid_argument("attention_backward: needs the saved probs or logsumexp");
  if (s.seq == 0 || s.batch == 0) return;
  const Views w(s);
  CUDA_CHECK(cudaMemsetAsync(d_qkv, 0, sizeof(float) * s.batch * w.S * w.row, stream));
  const I64 blk_n = w.H * w.S * w.S;
  const bool dropout = drop.p > 0.0f || mask != nullptr;
  // Scratch: dP always, P when recomputed, P·factor with dropout.
  const std::size_t blocks = 1 + (probs ? 0 : 1) + (dropout ? 1 : 0);
  float* scratch = static_cast<float*>(workspace(sizeof(float) * static_cast<std::size_t>(blk_n) * blocks));
  float* dp = scratch;
  float* p_buf = probs ? nullptr : scratch + blk_n;
  float* pd_buf = dropout ? scratch + (blocks - 1) * blk_n : nullptr;
  const float scale = 1.0f / std::sqrt(static_cast<float>(w.D));
  for (I64 b = 0; b < s.batch; ++b) {
    const float* base = qkv + b * w.S * w.row;
    float* dbase = d_qkv + b * w.S * w.row;
    const float* dO = d_out + b * w.S * w.HD;
    const float* p = probs ? probs + b * blk_n : p_buf;
    if (!probs) {
      scores(blas, w, base, p_buf, scale, stream);
      probs_from_lse<<<static_cast<unsigned>(w.H * w.S), kThreads, 0, stream>>>(p_buf, lse + b * w.H * w.S, w.S,
                                                                                  s.causal);
      CUDA_CHECK_LAUNCH();
    }
    for (I64 j = 0; j < w.G; ++j)  // dP_dropped = dO · Vᵀ
      product(blas, false, true, w.S, w.S, w.D, 1.0f, dO + w.q(j), w.HD, w.G * w.D, base + w.v(), w.row, w.D, 0.0f,
              dp + w.block(j), w.S, w.G * w.S * w.S, w.KV, stream);
    softmax_bwd<<<static_cast<unsigned>(w.H * w.S), kThreads, 0, stream>>>(
        dp, pd_buf, p, mask ? mask + b * blk_n : nullptr, w.S, drop.p, dropout, drop.key,
        static_cast<std::uint64_t>(b * blk_n));
    CUDA_CHECK_LAUNCH();
    const float* pv = dropout ? pd_buf : p;
    for (I64 j = 0; j < w.G; ++j) {
      const I64 sb = w.G * w.S * w.S;
      // dV_g += P_droppedᵀ · dO
      product(blas, true, false, w.S, w.D, w.S, 1.0f, pv + w.block(j), w.S, sb, dO + w.q(j), w.HD, w.G * w.D, 1.0f,
              dbase + w.v(), w.row, w.D, w.KV, stream);
      // dQ = scale · dS · K
      product(blas, false, false, w.S, w.D, w.S, scale, dp + w.block(j), w.S, sb, base + w.k(), w.row, w.D, 1.0f,
              dbase + w.q(j), w.row, w.G * w.D, w.KV, stream);
      // dK_g += scale · dSᵀ · Q
      product(blas, true, false, w.S, w.D, w.S, scale, dp + w.block(j), w.S, sb, base + w.q(j), w.row, w.G * w.D,
              1.0f, dbase + w.k(), w.row, w.D, w.KV, stream);
    }
  }
}

}  // namespace tandem::kernels::cuda
