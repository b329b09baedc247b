#include "strategies/models/mlp.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include "tests/strategies/models/model_test_util.hpp"

namespace tandem {
namespace {

using testing::RecordingRuntime;

MlpConfig config() {
  MlpConfig c;
  c.name = "mlp-test";
  c.input_size = 784;
  c.hidden_sizes = {512, 256};
  c.output_size = 10;
  return c;
}

BatchShape batch(std::int64_t b) {
  BatchShape s;
  s.micro_batch = b;
  s.seq_len = 1;
  return s;
}

TEST(MlpTest, ParameterCountAndLayers) {
  const MlpModel model(config());
  const std::int64_t expected = 784 * 512 + 512 + 512 * 256 + 256 + 256 * 10 + 10;
  EXPECT_EQ(parameter_count(model.config()), expected);
  EXPECT_EQ(model.describe().parameter_count, expected);
  const auto layers = model.build_layers(batch(8), ParallelContext{});
  ASSERT_EQ(layers.size(), 3u);
  EXPECT_EQ(layers[0]->name(), "fc0");
  EXPECT_EQ(layers[1]->name(), "fc1");
  EXPECT_EQ(layers[2]->name(), "head");
  std::int64_t sum = 0;
  for (const auto& l : layers) sum += l->parameter_count();
  EXPECT_EQ(sum, expected);
}

TEST(MlpTest, MicroBatchFlopsAreSixTimesWeightsPerSample) {
  const MlpModel model(config());
  const std::int64_t b = 64;
  RecordingRuntime rt;
  auto layers = model.build_layers(batch(b), ParallelContext{});
  testing::allocate_all(rt, layers);
  const Tensor input = model.make_input(rt, batch(b), 0);
  EXPECT_EQ(input.shape, (std::vector<std::int64_t>{b, 784}));
  Tensor t = input;
  for (auto& l : layers) t = l->forward(rt, t, 0);
  EXPECT_EQ(t.shape, (std::vector<std::int64_t>{1}));
  Tensor g = testing::backward_all(rt, layers, t, 0);
  EXPECT_FALSE(g.valid());  // no gradient for the input features
  const double weights = 784.0 * 512 + 512.0 * 256 + 256.0 * 10;
  // The first layer computes no input gradient: 6·W minus 2·(784·512) per sample.
  EXPECT_DOUBLE_EQ(rt.total_flops(OpKind::gemm), (6.0 * weights - 2.0 * 784 * 512) * b);
  EXPECT_NEAR(rt.total_flops() / ((6.0 * weights - 2.0 * 784 * 512) * b), 1.0, 0.02);
  EXPECT_DOUBLE_EQ(model.describe().model_flops_per_token, 6.0 * weights);
  double analytic = 0;
  for (const auto& l : layers) analytic += l->forward_flops() + l->backward_flops();
  EXPECT_DOUBLE_EQ(analytic, rt.total_flops());
  EXPECT_TRUE(rt.errors().empty());
  EXPECT_DOUBLE_EQ(rt.current_bytes(MemCategory::activations), 0);
  EXPECT_TRUE(rt.duplicate_labels().empty());
  EXPECT_NE(rt.find_op("mb0.fc0.linear.fwd"), nullptr);
  EXPECT_NE(rt.find_op("mb0.head.loss.bwd"), nullptr);
  EXPECT_NE(rt.find_op("mb0.fc1.linear.bwd_w"), nullptr);
}

TEST(MlpTest, SavedActivations) {
  const MlpModel model(config());
  const auto layers = model.build_layers(batch(16), ParallelContext{});
  // fc0 keeps its input and pre-activation: 16·(784 + 512) bf16.
  EXPECT_DOUBLE_EQ(layers[0]->saved_activation_bytes(), 2.0 * 16 * (784 + 512));
}

TEST(MlpTest, InvalidConfigAndTensorParallelThrow) {
  MlpConfig bad = config();
  bad.output_size = 0;
  EXPECT_THROW(MlpModel{bad}, std::invalid_argument);
  const MlpModel model(config());
  ParallelContext ctx;
  ctx.tp_size = 2;
  EXPECT_THROW(model.build_layers(batch(4), ctx), std::invalid_argument);
}

}  // namespace
}  // namespace tandem
