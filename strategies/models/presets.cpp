#include "strategies/models/presets.hpp"

#include <functional>
#include <map>
#include <stdexcept>

namespace tandem {
namespace {

// What sets a model family apart besides its sizes.
struct Family {
  NormType norm;
  ActivationType activation;
  PositionEmbeddingType position;
  bool tied_embeddings;
  bool bias;
  double dropout;  // hidden and attention
};

TransformerConfig sized(std::string name, const Family& family, std::int64_t layers,
                        std::int64_t hidden, std::int64_t heads, std::int64_t ffn,
                        std::int64_t vocab, std::int64_t seq) {
  TransformerConfig c;
  c.name = std::move(name);
  c.num_layers = layers;
  c.hidden_size = hidden;
  c.num_attention_heads = heads;
  c.ffn_hidden_size = ffn;
  c.vocab_size = vocab;
  c.max_position_embeddings = seq;
  c.seq_length = seq;
  c.norm = family.norm;
  c.activation = family.activation;
  c.position = family.position;
  c.tied_embeddings = family.tied_embeddings;
  c.bias = family.bias;
  c.hidden_dropout = family.dropout;
  c.attention_dropout = family.dropout;
  return c;
}

TransformerConfig llama(std::string name, std::int64_t layers, std::int64_t hidden,
                        std::int64_t heads, std::int64_t kv_heads, std::int64_t ffn,
                        std::int64_t vocab, std::int64_t seq) {
  const Family family{NormType::rmsnorm, ActivationType::swiglu, PositionEmbeddingType::rope,
                      /*tied_embeddings=*/false, /*bias=*/false, /*dropout=*/0.0};
  TransformerConfig c = sized(std::move(name), family, layers, hidden, heads, ffn, vocab, seq);
  c.num_query_groups = kv_heads;
  // Fused attention, no dropout, as the Llamas are trained: Llama 1 (Touvron et al. 2023, sec.
  // 2.4) used xformers' memory-efficient causal attention, Llama 2 kept Llama 1's pretraining
  // setting (sec. 2.2), and the public Llama recipes (Megatron-LM, NeMo, torchtitan) run flash
  // attention; none of them uses dropout (the family's dropout above is 0).
  c.use_flash_attn = true;
  return c;
}

// Mixtral (Jiang et al. 2024, arXiv 2401.04088, Table 1, and the released config.json): a
// Mistral-style Llama block whose MLP is `experts` SwiGLU experts, top-2 routing, dropless (as
// MegaBlocks trains it): capacity factor 0 here, priced by the simulator at the busiest expert's
// expected load (TransformerConfig::expected_busiest_expert_rows) unless a scenario sets
// moe_expert_capacity_factor.
TransformerConfig mixtral(std::string name, std::int64_t layers, std::int64_t hidden, std::int64_t heads,
                          std::int64_t ffn, std::int64_t vocab, std::int64_t experts) {
  TransformerConfig c = llama(std::move(name), layers, hidden, heads, 8, ffn, vocab, 32768);
  c.num_moe_experts = experts;
  c.moe_router_topk = 2;
  return c;
}

// DeepSeek-V3 (arXiv 2412.19437, section 4.2 and its config.json): 61 layers 7,168 wide, the first
// 3 with a dense SwiGLU MLP of 18,432, the others 256 routed experts of 2,048 (top-8) and one
// shared expert of 2,048; vocabulary 129,280, untied; 671B parameters, 37B active (the paper's
// figures, without its 14B multi-token-prediction module). Multi-head latent attention (MLA) is
// approximated by grouped-query attention with its 128 query heads of 128 and 8 key/value groups:
// 249M attention weights per layer where MLA has 187M (its low-rank Q and KV projections), so
// the approximation holds 675B (+0.6%) with 41.4B active (+12%; 37.6B without that excess); the
// attention core is priced at head dim 128 (MLA's QK^T runs over 192). No auxiliary-loss-free balancing (its bias is not
// modelled): Switch's loss instead, at DeepSeek's sequence-wise coefficient 1e-4.
TransformerConfig deepseek_v3_like() {
  TransformerConfig c = llama("deepseek-v3-like", 61, 7168, 128, 8, 18432, 129280, 4096);
  c.kv_channels = 128;
  c.num_moe_experts = 256;
  c.moe_router_topk = 8;
  c.moe_ffn_hidden_size = 2048;
  c.moe_shared_expert_intermediate_size = 2048;
  c.moe_first_dense_layers = 3;
  c.moe_aux_loss_coeff = 1e-4;
  return c;
}

const std::map<std::string, std::function<TransformerConfig()>>& presets() {
  static const std::map<std::string, std::function<TransformerConfig()>> table = {
      {"gpt-tiny", [] { return gpt_config("gpt-tiny", 2, 64, 4, 32, 256); }},
      {"gpt2-124m", [] { return gpt_config("gpt2-124m", 12, 768, 12, 1024); }},
      {"gpt2-350m", [] { return gpt_config("gpt2-350m", 24, 1024, 16, 1024); }},
      {"gpt2-1.5b", [] { return gpt_config("gpt2-1.5b", 48, 1600, 25, 1024); }},  // GPT-2 XL
      {"gpt3-1.3b", [] { return gpt_config("gpt3-1.3b", 24, 2048, 16, 2048); }},
      {"gpt3-13b",
       [] {
         TransformerConfig c = gpt_config("gpt3-13b", 40, 5140, 40, 2048);
         c.kv_channels = 128;
         return c;
       }},
      {"gpt3-175b", [] { return gpt_config("gpt3-175b", 96, 12288, 96, 2048); }},
      {"llama2-7b", [] { return llama("llama2-7b", 32, 4096, 32, 32, 11008, 32000, 4096); }},
      {"llama2-70b", [] { return llama("llama2-70b", 80, 8192, 64, 8, 28672, 32000, 4096); }},
      {"llama3-8b", [] { return llama("llama3-8b", 32, 4096, 32, 8, 14336, 128256, 8192); }},
      {"llama3-70b", [] { return llama("llama3-70b", 80, 8192, 64, 8, 28672, 128256, 8192); }},
      // Llama 3 paper (arXiv 2407.21783), Table 3: 126 layers, model dimension 16,384, FFN 53,248,
      // 128 heads, 8 key/value heads; 128,256 tokens with the special ones (the released config).
      {"llama3-405b", [] { return llama("llama3-405b", 126, 16384, 128, 8, 53248, 128256, 8192); }},
      // 46.7B parameters, 12.9B active per token (Mistral AI's announcement).
      {"mixtral-8x7b", [] { return mixtral("mixtral-8x7b", 32, 4096, 32, 14336, 32000, 8); }},
      // 141B parameters, 39B active (Mistral AI's announcement; config.json: 56 layers, 6144 wide).
      {"mixtral-8x22b", [] { return mixtral("mixtral-8x22b", 56, 6144, 48, 16384, 32768, 8); }},
      {"deepseek-v3-like", deepseek_v3_like},
  };
  return table;
}

}  // namespace

TransformerConfig gpt_config(std::string name, std::int64_t layers, std::int64_t hidden,
                             std::int64_t heads, std::int64_t seq, std::int64_t vocab) {
  const Family family{NormType::layernorm, ActivationType::gelu, PositionEmbeddingType::learned,
                      /*tied_embeddings=*/true, /*bias=*/true, /*dropout=*/0.1};
  return sized(std::move(name), family, layers, hidden, heads, 4 * hidden, vocab, seq);
}

TransformerConfig transformer_preset(const std::string& name) {
  const auto& table = presets();
  auto it = table.find(name);
  if (it == table.end()) {
    std::string known;
    for (const auto& n : preset_names()) known += (known.empty() ? "" : ", ") + n;
    throw std::invalid_argument("unknown transformer preset '" + name + "' (known: " + known +
                                ")");
  }
  return it->second();
}

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  for (const auto& [name, make] : presets()) names.push_back(name);
  return names;
}

}  // namespace tandem
