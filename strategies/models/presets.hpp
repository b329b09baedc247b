// Named transformer configurations from their papers / released configs.
//   gpt2-124m, gpt2-350m        Radford et al. 2019 (GPT-2), learned positions, tied, s = 1024
//   gpt3-1.3b, gpt3-13b, gpt3-175b   Brown et al. 2020, Table 2.1 (13B: d_model 5140 with
//                               40 heads of 128, so kv_channels = 128 ≠ 5140/40), s = 2048
//   llama2-7b, llama2-70b       Touvron et al. 2023 (70B: GQA with 8 KV heads), s = 4096
//   llama3-8b, llama3-70b       Meta Llama 3 (GQA 8, vocab 128256), s = 8192
//   gpt-tiny                    2 layers, h = 64, 4 heads, V = 256, s = 32: fast tests, CPU runs
#pragma once

#include <string>
#include <vector>

#include "strategies/models/transformer.hpp"

namespace tandem {

// Throws std::invalid_argument listing the known names.
TransformerConfig transformer_preset(const std::string& name);
std::vector<std::string> preset_names();

// The presets' GPT family at the given sizes: layernorm, GeLU, learned positions covering the
// sequence, tied table, biases, dropout 0.1, ffn = 4·hidden, GPT-2's vocabulary unless given.
// Also what tests and benchmarks build their small GPTs from.
TransformerConfig gpt_config(std::string name, std::int64_t layers, std::int64_t hidden,
                             std::int64_t heads, std::int64_t seq, std::int64_t vocab = 50257);

}  // namespace tandem
