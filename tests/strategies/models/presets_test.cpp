#include "strategies/models/presets.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace tandem {
namespace {

double count(const std::string& name) {
  return static_cast<double>(parameter_count(transformer_preset(name)));
}

TEST(PresetTest, Gpt2ParameterCountsArePublished) {
  // 124,439,808: the HuggingFace gpt2 checkpoint (tied embeddings, learned positions).
  EXPECT_EQ(parameter_count(transformer_preset("gpt2-124m")), 124439808);
  EXPECT_NEAR(count("gpt2-350m"), 354.8e6, 0.5e6);  // "GPT-2 medium", 355M
}

TEST(PresetTest, Gpt3ParameterCountsMatchTheirNames) {
  EXPECT_NEAR(count("gpt3-175b") / 175e9, 1.0, 0.01);
  EXPECT_NEAR(count("gpt3-13b") / 13e9, 1.0, 0.03);
  EXPECT_NEAR(count("gpt3-1.3b") / 1.3e9, 1.0, 0.03);
}

TEST(PresetTest, LlamaParameterCountsArePublished) {
  EXPECT_EQ(parameter_count(transformer_preset("llama2-7b")), 6738415616);   // HF: 6.74B
  EXPECT_EQ(parameter_count(transformer_preset("llama2-70b")), 68976648192); // 68.98B
  EXPECT_EQ(parameter_count(transformer_preset("llama3-8b")), 8030261248);   // 8.03B
  EXPECT_EQ(parameter_count(transformer_preset("llama3-405b")), 405853388800);  // 405.85B, as released
  EXPECT_NEAR(count("llama3-70b"), 70.55e9, 0.01e9);                          // 70.6B
}

TEST(PresetTest, NamesAndUnknownName) {
  const auto names = preset_names();
  for (const char* n : {"gpt-tiny", "gpt2-124m", "gpt2-350m", "gpt3-1.3b", "gpt3-13b",
                        "gpt3-175b", "llama2-7b", "llama2-70b", "llama3-8b", "llama3-70b",
                        "llama3-405b"})
    EXPECT_NE(std::find(names.begin(), names.end(), n), names.end()) << n;
  for (const auto& n : names) {
    const auto cfg = transformer_preset(n);
    EXPECT_EQ(cfg.name, n);
    EXPECT_NO_THROW(validate(cfg)) << n;
  }
  try {
    transformer_preset("gpt5");
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("gpt5"), std::string::npos);
    EXPECT_NE(what.find("llama2-7b"), std::string::npos);
    EXPECT_NE(what.find("gpt-tiny"), std::string::npos);
  }
}

TEST(PresetTest, ShapesFromThePapers) {
  const auto g13 = transformer_preset("gpt3-13b");
  EXPECT_EQ(g13.num_layers, 40);
  EXPECT_EQ(g13.hidden_size, 5140);
  EXPECT_EQ(g13.num_attention_heads, 40);
  EXPECT_EQ(g13.head_dim(), 128);
  const auto l70 = transformer_preset("llama2-70b");
  EXPECT_EQ(l70.query_groups(), 8);
  EXPECT_EQ(l70.ffn_size(), 28672);
  EXPECT_FALSE(l70.tied_embeddings);
  EXPECT_FALSE(l70.bias);
  EXPECT_EQ(l70.norm, NormType::rmsnorm);
  const auto g2 = transformer_preset("gpt2-124m");
  EXPECT_TRUE(g2.tied_embeddings);
  EXPECT_EQ(g2.position, PositionEmbeddingType::learned);
  EXPECT_EQ(g2.seq_length, 1024);
  EXPECT_EQ(transformer_preset("gpt3-175b").seq_length, 2048);
}

}  // namespace
}  // namespace tandem
