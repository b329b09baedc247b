// Every number of a scenario is read as 64-bit and range-checked, sizes are bounded before any
// work, and structure yaml-cpp lets through is refused: each of the examples (a wrapped
// data_parallel_size, iterations or top_k, lr 1e308, a duplicate cluster, seq_length beyond
// gpt-tiny's positions, a 2^62 vocabulary, a million layers, a two-billion batch) is one
// InputError naming the file, the line and the field. Applied to the bundled scenarios.
#include <gtest/gtest.h>

#include <string>

#include "common/input_limits.hpp"
#include "scenarios/scenario.hpp"
#include "scenarios/scenario_limits.hpp"
#include "scenarios/search_spec.hpp"
#include "tests/platforms/platform_test_support.hpp"

namespace tandem {
namespace {

using test::BadCase;

// gpt-tiny-localhost.yaml: gpt-tiny, data parallel over the two cores of localhost.
TEST(ScenarioValidation, TinyScenarioNumbersAndStructure) {
  test::expect_input_errors_at_the_right_places(
      test::bundled_text("scenarios/gpt-tiny-localhost.yaml"),
      {
        BadCase{"dp that wraps to 2", "data_parallel_size: 2", "data_parallel_size: 4294967298",
                "strategy.data_parallel_size", "data_parallel_size", "must be a whole number between"},
        BadCase{"dp beyond 64 bits", "data_parallel_size: 2", "data_parallel_size: 99999999999999999999",
                "strategy.data_parallel_size", "data_parallel_size", "64-bit"},
        BadCase{"lr 1e308", "lr: 0.001", "lr: 1e308", "training.lr", "lr:", "must be between"},
        BadCase{"lr nan", "lr: 0.001", "lr: .nan", "training.lr", "lr:", "expected a number"},
        BadCase{"seq_length beyond gpt-tiny's positions", "seq_length: 32", "seq_length: 64", "training.seq_length",
                "seq_length", "max_position_embeddings"},
        BadCase{"batch of 2^31", "global_batch_size: 8", "global_batch_size: 2147483648",
                "training.global_batch_size", "global_batch_size", "must be a whole number between"},
        BadCase{"duplicate cluster", "cluster: localhost", "cluster: localhost\ncluster: no-such-cluster", "cluster",
                "cluster: no-such", "first at line"},
        BadCase{"iterations that wrap to 1", "data_parallel_size: 2",
                "data_parallel_size: 2\nsimulation:\n  iterations: 4294967297", "simulation.iterations", "iterations",
                "must be a whole number between"},
        BadCase{"negative warmup", "data_parallel_size: 2", "data_parallel_size: 2\nsimulation:\n  warmup_iterations: -1",
                "simulation.warmup_iterations", "warmup_iterations", "must be a whole number between"},
        BadCase{"second document", "data_parallel_size: 2", "data_parallel_size: 2\n---\nname: other",
                "name", "name: other", "second YAML document"},
        BadCase{"model as a list", "model: gpt-tiny", "model: [gpt-tiny]", "model", "model:", "expected a single value"},
        BadCase{"key as a list", "model: gpt-tiny", "model: gpt-tiny\n? [a, b]\n: 1", "(top level)", "? [a", "plain name"}},
      [](const std::string& path) { load_scenario(path); });
}

// A validation case's text with its cluster, a path relative to the case's folder, replaced by a
// bundled cluster's name: the text then loads from any folder.
std::string case_on_bundled_cluster(const std::string& file, const std::string& relative, const std::string& bundled) {
  std::string text = test::bundled_text("validation/cases/" + file);
  const std::string line = "cluster: " + relative;
  const auto at = text.find(line);
  EXPECT_NE(at, std::string::npos) << file << ": no '" << line << "'";
  if (at != std::string::npos) text.replace(at, line.size(), "cluster: " + bundled);
  return text;
}

// flash-attn-125m-8xa100 (validation/cases): a FlashAttention version the A100 profile has no
// figure for, one that does not exist, or a version without flash attention is one InputError at
// the model's field, when the scenario is read or when its strategy meets the cluster's GPUs; so is
// an accumulation of weight gradients AMP does not do, or one that does not exist.
// lambda-fa2-2.7b-1xh100 (validation/cases): FlashAttention 3 with the model's attention dropout
// (0.1) cannot run (FA3 has no dropout) and is refused at the version's field.
TEST(ScenarioValidation, FlashAttentionThreeWithAttentionDropoutIsRefusedAtTheVersion) {
  test::expect_input_errors_at_the_right_places(
      case_on_bundled_cluster("lambda-fa2-2.7b-1xh100.yaml", "../../platforms/clusters/dgx-h100.yaml", "dgx-h100"),
      {BadCase{"FlashAttention 3 with attention dropout", "flash_attn_version: 2 ", "flash_attn_version: 3 ",
               "model.flash_attn_version", "flash_attn_version", "has no attention dropout"}},
      [](const std::string& path) { make_strategy(load_scenario(path)); });
}

TEST(ScenarioValidation, AFlashAttentionVersionTheProfileCannotPriceIsRefusedAtItsField) {
  test::expect_input_errors_at_the_right_places(
      case_on_bundled_cluster("flash-attn-125m-8xa100.yaml", "../../platforms/clusters/dgx-a100.yaml", "dgx-a100"),
      {
        BadCase{"FlashAttention 3 on an A100", "flash_attn_version: 1 ", "flash_attn_version: 3 ",
                "model.flash_attn_version", "flash_attn_version", "has no figure in rank 0's A100-SXM-80GB"},
        BadCase{"FlashAttention 4", "flash_attn_version: 1 ", "flash_attn_version: 4 ", "model.flash_attn_version",
                "flash_attn_version", "must be a whole number between 1 and 3, got 4"},
        BadCase{"a version without flash attention", "use_flash_attn: true ", "use_flash_attn: false ",
                "model.flash_attn_version", "flash_attn_version", "needs use_flash_attn: true"},
        BadCase{"FlashAttention 1 past head dim 128", "num_attention_heads: 12", "num_attention_heads: 3",
                "model.flash_attn_version", "flash_attn_version", "head dims up to 128"},
        BadCase{"AMP with a fused accumulation", "autocast: true ", "autocast: true\n  grad_accumulation: fused ",
                "training.grad_accumulation", "grad_accumulation", "through a cast: cast_add"},
        BadCase{"an unknown accumulation", "autocast: true ", "autocast: false\n  grad_accumulation: sometimes ",
                "training.grad_accumulation", "grad_accumulation", "expected fused, add or cast_add"}},
      [](const std::string& path) { make_strategy(load_scenario(path)); });
}

// A master kept as a remainder completes bf16 parameters: fp16 ones, or AMP's fp32 ones, are one
// InputError at the strategy's field.
TEST(ScenarioValidation, AMasterKeptAsARemainderNeedsBf16ParametersWithoutAmp) {
  test::expect_input_errors_at_the_right_places(
      case_on_bundled_cluster("nemo-h100-fp8-llama2-7b.yaml", "../clusters/h100-superpod.yaml", "dgx-h100"),
      {
        BadCase{"fp16 parameters", "precision: bf16", "precision: fp16", "strategy.master_param_remainders",
                "master_param_remainders", "needs training.precision bf16"},
        BadCase{"AMP's fp32 parameters", "precision: bf16", "precision: bf16\n  autocast: true",
                "strategy.master_param_remainders", "master_param_remainders", "without training.autocast"}},
      [](const std::string& path) { make_strategy(load_scenario(path)); });
}

// search-tiny-h100.yaml: a custom 4-layer GPT on tiny-h100, with a search: section.
TEST(ScenarioValidation, SearchScenarioNumbersAndSizes) {
  test::expect_input_errors_at_the_right_places(
      test::bundled_text("scenarios/search-tiny-h100.yaml"),
      {
        BadCase{"top_k that wraps to 1", "top_k: 5", "top_k: 4294967297", "search.top_k", "top_k",
                "must be a whole number between"},
        BadCase{"vocabulary of 2^62", "vocab_size: 8192", "vocab_size: 4611686018427387904", "model.vocab_size",
                "vocab_size", "must be a whole number between"},
        BadCase{"a million layers", "num_layers: 4", "num_layers: 1000000", "model.num_layers", "num_layers",
                "must be a whole number between"},
        BadCase{"hidden size past its bound", "hidden_size: 512", "hidden_size: 4294967296", "model.hidden_size",
                "hidden_size", "must be a whole number between"},
        BadCase{"a model of 1e18 parameters", "num_layers: 4\n  hidden_size: 512",
                "num_layers: 65536\n  hidden_size: 1048576", "model.num_layers", "num_layers", "parameters"},
        BadCase{"activations past 64 bits", "seq_length: 256", "seq_length: 16777216", "model.seq_length",
                "seq_length", "activations"},
        BadCase{"2M micro-batches per replica", "global_batch_size: 16", "global_batch_size: 16777216",
                "training.global_batch_size", "global_batch_size", "the simulation would"},
        BadCase{"max_evaluations that wraps", "top_k: 5", "top_k: 5\n  max_evaluations: 4294967297",
                "search.max_evaluations", "max_evaluations", "must be a whole number between"}},
      [](const std::string& path) { load_search_scenario(path); });
}

// The limits are generous: what real machines and models reach passes, with room.
TEST(ScenarioLimits, A16kGpuFoldedSimulationOfA1TModelWith512MicroBatchesIsAccepted) {
  test::TempDir dir;
  dir.write("big.yaml",
            "name: big\n"
            "network: { topology: fat_tree, switch_latency_us: 0.13, nodes_per_leaf: 32 }\n"
            "node_groups:\n"
            "  - name: h100\n"
            "    device: h100-sxm\n"
            "    nodes: 2048\n"
            "    devices_per_node: 8\n"
            "    intra_node: { fabric: nvswitch, bandwidth_gb_per_s: 450, latency_us: 1.0 }\n"
            "    nic: { bandwidth_gbit_per_s: 400, latency_us: 2.0 }\n");
  const std::string path = dir.write("scenario.yaml",
                                     "name: one-t\n"
                                     "model: { type: transformer, num_layers: 128, hidden_size: 25600,\n"
                                     "         num_attention_heads: 160, vocab_size: 51200, seq_length: 2048 }\n"
                                     "cluster: big.yaml\n"
                                     "training: { global_batch_size: 16384, micro_batch_size: 1 }\n"
                                     "strategy: { type: hybrid, data_parallel_size: 32, tensor_model_parallel_size: 8,\n"
                                     "            pipeline_model_parallel_size: 64 }\n");
  const Scenario s = load_scenario(path);
  EXPECT_EQ(s.cluster.device_count(), 16384);
  const SimulationSize size = estimate_simulation_size(s, s.simulation);
  EXPECT_EQ(size.micro_batches, 64 + 65);  // pipeline extrapolation: two shorter iterations of 512
  EXPECT_LT(size.ops, 1e9L);
  EXPECT_LT(size.memory_bytes, 8e9L) << "fits a machine of 16 GB";
}

// A cluster of `nodes` DGX-like nodes whose leaf uplinks are oversubscribed 1:7, and a hybrid
// tp8 x pp16 x dp scenario on all of it (Llama 3 405B's layout on Meta's cluster, validation/).
std::string oversubscribed_scenario(test::TempDir& dir, int nodes, int dp) {
  dir.write("clos.yaml",
            "name: clos\n"
            "network: { topology: fat_tree, switch_latency_us: 0.13, nodes_per_leaf: 48, oversubscription: 7 }\n"
            "node_groups:\n"
            "  - name: h100\n"
            "    device: h100-sxm\n"
            "    nodes: " + std::to_string(nodes) + "\n"
            "    devices_per_node: 8\n"
            "    intra_node: { fabric: nvswitch, bandwidth_gb_per_s: 450, latency_us: 1.0 }\n"
            "    nic: { bandwidth_gbit_per_s: 400, latency_us: 2.0 }\n");
  return dir.write("scenario.yaml",
                   "name: clos-run\n"
                   "model: { type: transformer, num_layers: 32, hidden_size: 4096,\n"
                   "         num_attention_heads: 32, vocab_size: 51200, seq_length: 2048 }\n"
                   "cluster: clos.yaml\n"
                   "training: { global_batch_size: " + std::to_string(dp) + ", micro_batch_size: 1 }\n"
                   "strategy: { type: hybrid, data_parallel_size: " + std::to_string(dp) +
                   ", tensor_model_parallel_size: 8,\n"
                   "            pipeline_model_parallel_size: 16 }\n");
}

// Replicas and tensor groups do not fold on an oversubscribed fabric, so every rank is counted.
TEST(ScenarioLimits, EveryRankCountsOnAnOversubscribedFabric) {
  test::TempDir dir;
  const Scenario s = load_scenario(oversubscribed_scenario(dir, 64, 4));
  EXPECT_EQ(estimate_simulation_size(s, s.simulation).simulated_ranks, 512);
}

// Every rank of an 8,192-GPU run on an oversubscribed fabric (Llama 3 405B's layout) is estimated
// within what a 16 GB machine allows, and not below what was measured: ~0.2 MB per simulated rank
// (the 405B layout's 512-rank member peaked at 483 MB, 392 MB with 128 ranks; scenario_limits.cpp).
TEST(ScenarioLimits, EveryRankOfAnEightThousandGpuRunIsEstimatedAtWhatItNeeds) {
  test::TempDir dir;
  const Scenario s = load_scenario(oversubscribed_scenario(dir, 1024, 64));
  const SimulationSize size = estimate_simulation_size(s, s.simulation);
  EXPECT_EQ(size.simulated_ranks, 8192);
  EXPECT_LT(size.memory_bytes, 8e9L) << "fits a machine of 16 GB";
  EXPECT_GT(size.memory_bytes, 8192 * 0.2e6L) << "at least the measured state of every rank";
  EXPECT_LT(size.ops, limits::kMaxSimulatedOps);
}

// One SimGrid actor per rank and communication stream, two memory mappings each: past the
// kernel's vm.max_map_count SimGrid would abort mid-run; refused before, naming the knob.
TEST(ScenarioLimits, MoreActorsThanTheKernelsMappingLimitAreRefusedBeforeSimulating) {
  const long double limit = max_map_count();
  // 16,384 nodes x 8 = 131,072 ranks, 1.3M mappings: past Linux's default (65,530) and
  // systemd's (1,048,576).
  if (limit > 1'200'000) GTEST_SKIP() << "vm.max_map_count is " << limit << " here: 131,072 ranks fit";
  test::TempDir dir;
  const std::string path = oversubscribed_scenario(dir, 16384, 1024);
  try {
    const Scenario s = load_scenario(path);
    check_simulation_size(s, s.simulation);
    FAIL() << "accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("vm.max_map_count"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("data_parallel_size"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tandem
