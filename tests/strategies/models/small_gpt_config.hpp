// A small GPT-shaped TransformerConfig for tests and benchmarks, so that they state only the
// sizes they depend on.
#pragma once

#include <cstdint>
#include <string>

#include "strategies/models/transformer.hpp"

namespace tandem::testing {

// The given sizes with TransformerConfig's GPT defaults (layernorm, GeLU, learned positions,
// tied table, biases, dropout 0.1, ffn = 4·hidden); the position table covers the sequence.
inline TransformerConfig small_gpt_config(std::string name, std::int64_t layers, std::int64_t hidden,
                                          std::int64_t heads, std::int64_t vocab, std::int64_t seq) {
  TransformerConfig c;
  c.name = std::move(name);
  c.num_layers = layers;
  c.hidden_size = hidden;
  c.num_attention_heads = heads;
  c.vocab_size = vocab;
  c.seq_length = seq;
  c.max_position_embeddings = seq;
  return c;
}

}  // namespace tandem::testing
