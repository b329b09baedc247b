// What re-splitting a pipeline's layers costs (scenarios/layer_resplit.hpp): the layers that cross
// each stage boundary, each rank's share of their weights and optimizer state, over the path
// between the stages' devices; nothing for a plan without a pipeline.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "scenarios/layer_resplit.hpp"
#include "strategies/models/transformer.hpp"

namespace tandem {
namespace {

namespace fs = std::filesystem;

// GPT-2 124M (12 layers) on tiny-h100 (2 nodes x 4): ranks 0-3 hold stage 0, ranks 4-7 stage 1.
Scenario pipeline_scenario(const std::string& strategy) {
  const fs::path dir = fs::temp_directory_path() / ("tandem-layer-resplit-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path path = dir / "s.yaml";
  std::ofstream(path) << "name: resplit\nmodel: gpt2-124m\ncluster: tiny-h100\n"
                         "training: { global_batch_size: 64, micro_batch_size: 4, seq_length: 1024, precision: bf16 }\n"
                      << strategy << "\n";
  Scenario s = load_scenario(path.string());
  fs::remove_all(dir);
  return s;
}

TEST(LayerResplit, MovedLayersCrossTheStageBoundaryAtTheNodesLinkRate) {
  Scenario s = pipeline_scenario(
      "strategy: { type: hybrid, pipeline_model_parallel_size: 2, data_parallel_size: 4, zero_stage: 1 }");
  // Stage 0's devices at a third of stage 1's speed: the proportional split gives it 3 of 12 layers.
  std::vector<double> speeds(8, 3.0);
  for (int r = 0; r < 4; ++r) speeds[r] = 1.0;
  Scenario to = s;
  to.hybrid.partition = HybridConfig::Partition::proportional;
  const auto from_plan = make_strategy(s), to_plan = make_strategy(to, speeds);
  const int before = from_plan->rank_roles()[0].layers, after = to_plan->rank_roles()[0].layers;
  ASSERT_EQ(before, 6);
  ASSERT_LT(after, before);
  // bf16 weights (2 bytes) + fp32 master, m, v (12) sharded over 4 replicas by ZeRO-1.
  const Bytes per_layer = layer_state_bytes_per_rank(s);
  EXPECT_DOUBLE_EQ(per_layer, static_cast<double>(block_parameter_count(s.model.transformer)) * (2 + 12.0 / 4));
  const Seconds t = layer_resplit_s(*from_plan, *to_plan, s.cluster, per_layer);
  EXPECT_DOUBLE_EQ(t, (before - after) * per_layer / s.cluster.path_bandwidth_bytes_per_s(0, 4));
  EXPECT_GT(t, 0);
  // Back to the even split: the same layers, the other way.
  EXPECT_DOUBLE_EQ(layer_resplit_s(*to_plan, *from_plan, s.cluster, per_layer), t);
  EXPECT_DOUBLE_EQ(layer_resplit_s(*from_plan, *from_plan, s.cluster, per_layer), 0);
}

TEST(LayerResplit, TensorShardsAndZeroThreeShrinkEachRanksShare) {
  const Scenario plain = pipeline_scenario("strategy: { type: hybrid, pipeline_model_parallel_size: 2, data_parallel_size: 4 }");
  const Scenario tensor = pipeline_scenario(
      "strategy: { type: hybrid, tensor_model_parallel_size: 2, pipeline_model_parallel_size: 2, data_parallel_size: 2 }");
  const Scenario zero3 = pipeline_scenario(
      "strategy: { type: hybrid, pipeline_model_parallel_size: 2, data_parallel_size: 4, zero_stage: 3 }");
  const double block = static_cast<double>(block_parameter_count(plain.model.transformer));
  EXPECT_DOUBLE_EQ(layer_state_bytes_per_rank(plain), block * 14);
  EXPECT_DOUBLE_EQ(layer_state_bytes_per_rank(tensor), block / 2 * 14);
  EXPECT_DOUBLE_EQ(layer_state_bytes_per_rank(zero3), block * 14 / 4);
}

}  // namespace
}  // namespace tandem
