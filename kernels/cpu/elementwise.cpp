#include "kernels/cpu/elementwise.hpp"

#include <cmath>
#include <cstring>
#include <vector>

namespace tandem::kernels::cpu {
namespace {

constexpr float kGeluScale = 0.7978845608028654f;  // √(2/π)
constexpr float kGeluCubic = 0.044715f;

float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

}  // namespace

// ---------------------------------------------------------------- GELU

void gelu_forward(float* y, const float* x, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    const float t = std::tanh(kGeluScale * (v + kGeluCubic * v * v * v));
    y[i] = 0.5f * v * (1.0f + t);
  }
}

void gelu_backward(float* dx, const float* x, const float* dy, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    const float t = std::tanh(kGeluScale * (v + kGeluCubic * v * v * v));
    // sech² = 1 - tanh²: no cosh, which overflows for |x| > ~89.
    const float sech2 = 1.0f - t * t;
    const float local = 0.5f * (1.0f + t) +
                        0.5f * v * sech2 * kGeluScale * (1.0f + 3.0f * kGeluCubic * v * v);
    dx[i] = dy[i] * local;
  }
}

// ---------------------------------------------------------------- SwiGLU

void swiglu_forward(float* y, const float* x, std::int64_t rows, std::int64_t cols) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* gate = x + r * 2 * cols;
    const float* up = gate + cols;
    float* out = y + r * cols;
    for (std::int64_t c = 0; c < cols; ++c) out[c] = gate[c] * sigmoid(gate[c]) * up[c];
  }
}

void swiglu_backward(float* dx, const float* x, const float* dy, std::int64_t rows,
                     std::int64_t cols) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* gate = x + r * 2 * cols;
    const float* up = gate + cols;
    const float* d = dy + r * cols;
    float* dgate = dx + r * 2 * cols;
    float* dup = dgate + cols;
    for (std::int64_t c = 0; c < cols; ++c) {
      const float g = gate[c];
      const float s = sigmoid(g);
      // silu'(g) = σ(g)·(1 + g·(1 - σ(g)))
      dgate[c] = d[c] * up[c] * s * (1.0f + g * (1.0f - s));
      dup[c] = d[c] * g * s;
    }
  }
}

// ---------------------------------------------------------------- add

void add_forward(float* y, const float* a, const float* b, std::int64_t n, std::int64_t nb) {
  if (nb == n) {
    for (std::int64_t i = 0; i < n; ++i) y[i] = a[i] + b[i];
    return;
  }
  for (std::int64_t i = 0; i < n; i += nb)
    for (std::int64_t j = 0; j < nb; ++j) y[i + j] = a[i + j] + b[j];
}

void add_backward(float* da, float* db, const float* dy, std::int64_t n, std::int64_t nb) {
  if (db) {
    if (nb == n) {
      if (db != dy) std::memmove(db, dy, sizeof(float) * static_cast<std::size_t>(n));
    } else {
      for (std::int64_t j = 0; j < nb; ++j) db[j] = 0.0f;
      for (std::int64_t i = 0; i < n; i += nb)
        for (std::int64_t j = 0; j < nb; ++j) db[j] += dy[i + j];
    }
  }
  if (da && da != dy) std::memmove(da, dy, sizeof(float) * static_cast<std::size_t>(n));
}

// ---------------------------------------------------------------- dropout

std::uint64_t fnv1a64(std::string_view text) {
  std::uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char ch : text) {
    h ^= ch;
    h *= 0x100000001B3ull;
  }
  return h;
}

std::string_view dropout_stem(std::string_view label) {
  const auto dot = label.rfind('.');
  return dot == std::string_view::npos ? label : label.substr(0, dot);
}

std::uint64_t dropout_key(std::uint64_t seed, std::string_view stem, std::int64_t iteration) {
  // Each ingredient is diffused before mixing so that nearby seeds / iterations give unrelated
  // keys.
  std::uint64_t k = splitmix64(seed + kGolden);
  k ^= fnv1a64(stem);
  k = splitmix64(k);
  k ^= splitmix64(static_cast<std::uint64_t>(iteration) + 2 * kGolden);
  return splitmix64(k);
}

void dropout_forward(float* y, std::uint8_t* mask, const float* x, std::int64_t n, float p,
                     std::uint64_t key, std::uint64_t first_index) {
  const float scale = 1.0f / (1.0f - p);
  for (std::int64_t i = 0; i < n; ++i) {
    const bool keep = dropout_keep(key, first_index + static_cast<std::uint64_t>(i), p);
    if (mask) mask[i] = keep ? 1 : 0;
    y[i] = keep ? x[i] * scale : 0.0f;
  }
}

void dropout_backward(float* dx, const float* dy, const std::uint8_t* mask, std::int64_t n,
                      float p) {
  const float scale = 1.0f / (1.0f - p);
  for (std::int64_t i = 0; i < n; ++i) dx[i] = mask[i] ? dy[i] * scale : 0.0f;
}

void dropout_backward_regenerate(float* dx, const float* dy, std::int64_t n, float p,
                                 std::uint64_t key, std::uint64_t first_index) {
  const float scale = 1.0f / (1.0f - p);
  for (std::int64_t i = 0; i < n; ++i)
    dx[i] = dropout_keep(key, first_index + static_cast<std::uint64_t>(i), p) ? dy[i] * scale
                                                                               : 0.0f;
}

// ---------------------------------------------------------------- bias add, scale, cast

void bias_add_forward(float* y, const float* bias, std::int64_t rows, std::int64_t cols) {
  for (std::int64_t r = 0; r < rows; ++r) {
    float* row = y + r * cols;
    for (std::int64_t c = 0; c < cols; ++c) row[c] += bias[c];
  }
}

void bias_add_backward(float* dbias, const float* dy, std::int64_t rows, std::int64_t cols) {
  // Column sums accumulated in double: rows can be b·s = many thousands of tokens.
  std::vector<double> sum(static_cast<std::size_t>(cols), 0.0);
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* row = dy + r * cols;
    for (std::int64_t c = 0; c < cols; ++c) sum[static_cast<std::size_t>(c)] += row[c];
  }
  for (std::int64_t c = 0; c < cols; ++c) dbias[c] += static_cast<float>(sum[static_cast<std::size_t>(c)]);
}

void scale_forward(float* y, const float* x, std::int64_t n, float alpha) {
  if (alpha == 0.0f) {
    for (std::int64_t i = 0; i < n; ++i) y[i] = 0.0f;
    return;
  }
  for (std::int64_t i = 0; i < n; ++i) y[i] = alpha * x[i];
}

void cast_forward(float* y, const float* x, std::int64_t n) {
  if (y != x) std::memmove(y, x, sizeof(float) * static_cast<std::size_t>(n));
}

void outer_nesterov(float* average, float* anchor, float* momentum, std::int64_t n, float lr, float mu) {
  for (std::int64_t i = 0; i < n; ++i) {
    const float delta = anchor[i] - average[i];
    momentum[i] = mu * momentum[i] + delta;
    // lr 1 and mu 0 give the average back exactly, not anchor - (anchor - average) rounded.
    const float next = lr == 1.0f && mu == 0.0f ? average[i] : anchor[i] - lr * (delta + mu * momentum[i]);
    anchor[i] = next;
    average[i] = next;
  }
}

}  // namespace tandem::kernels::cpu
