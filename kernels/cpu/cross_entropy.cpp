#include "kernels/cpu/cross_entropy.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tandem::kernels::cpu {
namespace {

using I64 = std::int64_t;

bool in_shard(std::int32_t label, I64 vocab, I64 offset) {
  return label >= 0 && label - offset >= 0 && label - offset < vocab;
}

}  // namespace

void cross_entropy_forward(float* softmax, float* stats, const float* logits,
                           const std::int32_t* labels, I64 tokens, I64 vocab, I64 vocab_offset) {
  for (I64 t = 0; t < tokens; ++t) {
    const float* z = logits + t * vocab;
    float mx = -std::numeric_limits<float>::infinity();
    for (I64 j = 0; j < vocab; ++j) mx = std::max(mx, z[j]);
    double sum = 0.0;
    for (I64 j = 0; j < vocab; ++j) sum += std::exp(static_cast<double>(z[j] - mx));
    const double lse = mx + std::log(sum);
    if (softmax) {
      float* p = softmax + t * vocab;
      for (I64 j = 0; j < vocab; ++j) p[j] = static_cast<float>(std::exp(z[j] - lse));
    }
    if (stats) {
      const std::int32_t label = labels[t];
      const double target = in_shard(label, vocab, vocab_offset) ? z[label - vocab_offset] : 0.0;
      stats[t * 2] = label < 0 ? 0.0f : static_cast<float>(lse - target);
      stats[t * 2 + 1] = static_cast<float>(lse);
    }
  }
}

float cross_entropy_mean_loss(const float* stats, I64 tokens) {
  if (tokens <= 0) return 0.0f;
  double sum = 0.0;
  for (I64 t = 0; t < tokens; ++t) sum += stats[t * 2];
  return static_cast<float>(sum / static_cast<double>(tokens));
}

void cross_entropy_backward(float* d_logits, const float* softmax, const std::int32_t* labels,
                            I64 tokens, I64 vocab, float grad_scale, I64 vocab_offset) {
  for (I64 t = 0; t < tokens; ++t) {
    const std::int32_t label = labels[t];
    float* d = d_logits + t * vocab;
    if (label < 0) {  // ignored token
      std::fill(d, d + vocab, 0.0f);
      continue;
    }
    const float* p = softmax + t * vocab;
    for (I64 j = 0; j < vocab; ++j) d[j] = p[j] * grad_scale;
    if (in_shard(label, vocab, vocab_offset)) d[label - vocab_offset] -= grad_scale;
  }
}

void softmax_shard_max(float* row_max, const float* logits, I64 tokens, I64 vocab) {
  for (I64 t = 0; t < tokens; ++t) {
    const float* z = logits + t * vocab;
    float mx = -std::numeric_limits<float>::infinity();
    for (I64 j = 0; j < vocab; ++j) mx = std::max(mx, z[j]);
    row_max[t] = mx;
  }
}

void softmax_shard_sum_exp(float* sums, const float* logits, const std::int32_t* labels,
                           const float* global_max, I64 tokens, I64 vocab, I64 vocab_offset) {
  for (I64 t = 0; t < tokens; ++t) {
    const float* z = logits + t * vocab;
    const float mx = global_max[t];
    double sum = 0.0;
    for (I64 j = 0; j < vocab; ++j) sum += std::exp(static_cast<double>(z[j] - mx));
    const std::int32_t label = labels[t];
    sums[t * 2] = static_cast<float>(sum);
    sums[t * 2 + 1] = in_shard(label, vocab, vocab_offset) ? z[label - vocab_offset] : 0.0f;
  }
}

void cross_entropy_shard_finish(float* softmax, float* stats, const float* logits,
                                const float* global_max, const float* sums,
                                const std::int32_t* labels, I64 tokens, I64 vocab) {
  for (I64 t = 0; t < tokens; ++t) {
    const double lse = global_max[t] + std::log(static_cast<double>(sums[t * 2]));
    if (softmax) {
      const float* z = logits + t * vocab;
      float* p = softmax + t * vocab;
      for (I64 j = 0; j < vocab; ++j) p[j] = static_cast<float>(std::exp(z[j] - lse));
    }
    if (stats) {
      stats[t * 2] = labels[t] < 0 ? 0.0f : static_cast<float>(lse - sums[t * 2 + 1]);
      stats[t * 2 + 1] = static_cast<float>(lse);
    }
  }
}

}  // namespace tandem::kernels::cpu
