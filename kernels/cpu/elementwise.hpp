// CPU reference element-wise kernels (fp32): GELU (tanh approximation), SwiGLU, add, dropout,
// bias add, scale, cast. Forward and backward side by side; every backward OVERWRITES its
// activation gradient except the bias gradient, which is a parameter gradient and ACCUMULATES.
// Inputs and outputs may alias element for element (y = x in place) unless a comment says not.
//
// ---- Dropout and its deterministic, counter-based RNG ----
// A dropout mask is a pure function of (key, element index); there is no generator state. The
// key is computed once per op on the host from
//     key = dropout_key(seed, stem, iteration)
// where `stem` is the op label without its last '.'-component ("mb0.layer3.attn.dropout.fwd"
// -> "mb0.layer3.attn.dropout"), so the forward, its recomputation (".recompute") and the
// backward (".bwd") of one dropout draw the same mask, and `iteration` makes successive
// training steps draw fresh masks. Element i of the op (its linear index in the tensor the op
// sees) is kept iff
//     u(key, i) >= p,   u(key, i) = (splitmix64(key + (i + 1)·0x9E3779B97F4A7C15) >> 40) · 2⁻²⁴
// i.e. u is the i-th output of a SplitMix64 generator seeded with `key`, reduced to 24 bits (a
// float in [0, 1) with every value exactly representable). Kept elements are scaled by
// 1/(1 - p) (inverted dropout), dropped ones are 0. The CUDA kernels must compute the same u from
// the same key, so a mask is identical on every backend, on every rank that runs the op with
// the same label (tensor-parallel ranks holding a replicated activation therefore agree), and
// whatever the execution order. Indices are local to the tensor the op sees: a sharded
// activation (sequence parallel) gives the same local pattern on every shard.
//
// The mask tensor: 1 byte per element (1 = kept, 0 = dropped), written into the tensor's
// storage reinterpreted as uint8_t (the models declare masks as numel/2 bf16 elements: same
// bytes). A null mask pointer means "don't store it"; backward can regenerate it from the key.
#pragma once

#include <cstdint>
#include <string_view>

#include "kernels/dropout_rng.hpp"

namespace tandem::kernels::cpu {

// ---- GELU, tanh approximation (GPT-2 / Megatron "gelu_tanh") ----
// y = 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))
void gelu_forward(float* y, const float* x, std::int64_t n);
// dx = dy · gelu'(x); x is the forward INPUT (pre-activation).
void gelu_backward(float* dx, const float* x, const float* dy, std::int64_t n);

// ---- SwiGLU ----
// x is [rows, 2·cols] holding gate | up along each row (Megatron's chunk(2, dim=-1));
// y[rows, cols] = silu(gate) · up with silu(g) = g·σ(g). y must not alias x.
void swiglu_forward(float* y, const float* x, std::int64_t rows, std::int64_t cols);
// dx [rows, 2·cols] = (d gate | d up) from dy [rows, cols]; x is the forward input. dx must not
// alias x or dy.
void swiglu_backward(float* dx, const float* x, const float* dy, std::int64_t rows,
                     std::int64_t cols);

// ---- add ----
// y[i] = a[i] + b[i mod nb] for i < n: nb == n is the plain sum; a smaller nb (dividing n)
// broadcasts b over the leading dimensions (e.g. position rows [s, h] over a batch [b, s, h]).
void add_forward(float* y, const float* a, const float* b, std::int64_t n, std::int64_t nb);
// The adjoint: da = dy (n elements); db[j] = Σ_{i ≡ j mod nb} dy[i] (overwritten). Either
// output may be null.
void add_backward(float* da, float* db, const float* dy, std::int64_t n, std::int64_t nb);

// ---- dropout ----
using kernels::dropout_keep;  // kernels/dropout_rng.hpp: splitmix64, dropout_uniform, dropout_keep
using kernels::dropout_uniform;
using kernels::splitmix64;
// FNV-1a over the bytes of `text`.
std::uint64_t fnv1a64(std::string_view text);
// The op label without its last '.'-component (the whole label when there is no dot).
std::string_view dropout_stem(std::string_view label);
// The per-op key (see the header comment).
std::uint64_t dropout_key(std::uint64_t seed, std::string_view stem, std::int64_t iteration);
// y = x·keep/(1-p); mask (nullable) receives keep as 0/1 bytes. `first_index` offsets the
// element index fed to the RNG (for callers that process a tensor in pieces). p in [0, 1).
void dropout_forward(float* y, std::uint8_t* mask, const float* x, std::int64_t n, float p,
                     std::uint64_t key, std::uint64_t first_index = 0);
// dx = dy·mask/(1-p) from a stored mask.
void dropout_backward(float* dx, const float* dy, const std::uint8_t* mask, std::int64_t n,
                      float p);
// dx = dy·keep(key, i)/(1-p), the mask regenerated from the key (no stored mask).
void dropout_backward_regenerate(float* dx, const float* dy, std::int64_t n, float p,
                                 std::uint64_t key, std::uint64_t first_index = 0);

// ---- bias add ----
// y[r, c] += bias[c] in place over y[rows, cols].
void bias_add_forward(float* y, const float* bias, std::int64_t rows, std::int64_t cols);
// dbias[c] += Σ_r dy[r, c] (ACCUMULATED: a parameter gradient).
void bias_add_backward(float* dbias, const float* dy, std::int64_t rows, std::int64_t cols);

// ---- scale / cast ----
// y = alpha·x (alpha == 0 writes zeros, even over NaN/Inf).
void scale_forward(float* y, const float* x, std::int64_t n, float alpha);
// y = x: a cast to a narrower type is a plain copy on the fp32 CPU backend.
void cast_forward(float* y, const float* x, std::int64_t n);

// ---- DiLoCo's outer step (strategies/op.hpp, ElementwiseFn::outer_nesterov) ----
// In place: delta = anchor - average; momentum = mu·momentum + delta;
// average = anchor = anchor - lr·(delta + mu·momentum).
void outer_nesterov(float* average, float* anchor, float* momentum, std::int64_t n, float lr, float mu);

}  // namespace tandem::kernels::cpu
