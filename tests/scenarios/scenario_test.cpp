// Scenarios: every bundled one loads; each class of bad input is one InputError naming the
// file, the line and the field.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "scenarios/scenario.hpp"

namespace tandem {
namespace {

namespace fs = std::filesystem;

std::string write_temp(const std::string& name, const std::string& text) {
  const fs::path dir = fs::temp_directory_path() / ("tandem-scenario-test-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path path = dir / name;
  std::ofstream(path) << text;
  return path.string();
}

const char* kGood =
    "name: good\n"                     // 1
    "model: gpt2-124m\n"               // 2
    "cluster: tiny-h100\n"             // 3
    "training:\n"                      // 4
    "  global_batch_size: 64\n"        // 5
    "  micro_batch_size: 8\n"          // 6
    "  seq_length: 1024\n"             // 7
    "strategy:\n"                      // 8
    "  type: data_parallel\n"          // 9
    "  data_parallel_size: 8\n";       // 10

InputError load_error(const std::string& text, const std::string& name = "bad.yaml") {
  const std::string path = write_temp(name, text);
  try {
    load_scenario(path);
  } catch (const InputError& e) {
    return e;
  }
  ADD_FAILURE() << "expected an InputError for:\n" << text;
  return InputError("", 0, "", "");
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

TEST(Scenario, EveryBundledScenarioLoads) {
  int count = 0;
  for (const auto& entry : fs::directory_iterator(bundled_dir("scenarios"))) {
    if (entry.path().extension() != ".yaml") continue;
    SCOPED_TRACE(entry.path().string());
    const Scenario s = load_scenario(entry.path().string());
    EXPECT_FALSE(s.name.empty());
    EXPECT_GT(s.cluster.device_count(), 0);
    ++count;
  }
  EXPECT_GE(count, 5);
}

TEST(Scenario, BundledScenarioResolvesByName) {
  const Scenario s = load_scenario("default");
  EXPECT_EQ(s.name, "default");
  EXPECT_EQ(s.parallel.data_parallel_size, 64);
  EXPECT_EQ(s.training.seq_length, 2048);
}

TEST(Scenario, GoodScenarioReadsMegatronKnobs) {
  const Scenario s = load_scenario(write_temp("good.yaml", kGood));
  EXPECT_EQ(s.training.global_batch_size, 64);
  EXPECT_EQ(s.training.micro_batch_size, 8);
  EXPECT_EQ(s.parallel.data_parallel_size, 8);
  EXPECT_EQ(s.model.transformer.num_layers, 12);
  EXPECT_EQ(s.line_of("strategy.data_parallel_size"), 10);
}

TEST(Scenario, APresetInMapFormKeepsItsOwnShapeAndTakesOverrides) {
  // GPT-3 13B is 5140 wide with 40 heads of 128 (kv_channels): not hidden / heads.
  const Scenario s = load_scenario(write_temp(
      "map.yaml", replaced(kGood, "model: gpt2-124m\n", "model:\n  preset: gpt3-13b\n  num_layers: 4\n")));
  EXPECT_EQ(s.model.transformer.hidden_size, 5140);
  EXPECT_EQ(s.model.transformer.num_layers, 4);
  EXPECT_EQ(s.model.transformer.head_dim(), 128);
}

TEST(Scenario, HeadsThatDoNotDivideTheHiddenSizeNeedKvChannels) {
  const std::string custom = "model:\n  hidden_size: 100\n  num_attention_heads: 3\n  num_layers: 2\n"
                             "  vocab_size: 256\n";
  const InputError e = load_error(replaced(kGood, "model: gpt2-124m\n", custom));
  EXPECT_EQ(e.field(), "model.num_attention_heads");
  EXPECT_EQ(e.line(), 4);
  EXPECT_NE(std::string(e.what()).find("kv_channels"), std::string::npos) << e.what();
  const Scenario s = load_scenario(
      write_temp("kv.yaml", replaced(kGood, "model: gpt2-124m\n", custom + "  kv_channels: 32\n")));
  EXPECT_EQ(s.model.transformer.head_dim(), 32);
}

TEST(Scenario, NormKernelIsReadAndAnUnknownOneNamesItsLine) {
  const std::string model = "model:\n  preset: gpt2-124m\n  norm_kernel: two_pass\n";
  const Scenario s = load_scenario(write_temp("norm.yaml", replaced(kGood, "model: gpt2-124m\n", model)));
  EXPECT_EQ(s.model.transformer.norm_kernel, NormKernel::two_pass);
  EXPECT_EQ(load_scenario(write_temp("good.yaml", kGood)).model.transformer.norm_kernel, NormKernel::one_pass);
  const InputError e = load_error(replaced(kGood, "model: gpt2-124m\n", replaced(model, "two_pass", "apex")));
  EXPECT_EQ(e.field(), "model.norm_kernel");
  EXPECT_EQ(e.line(), 4);
  EXPECT_NE(std::string(e.what()).find("one_pass or two_pass"), std::string::npos) << e.what();
}

TEST(Scenario, UnknownModelNamesTheModelLine) {
  const InputError e = load_error(replaced(kGood, "gpt2-124m", "gpt-9000"));
  EXPECT_EQ(e.line(), 2);
  EXPECT_EQ(e.field(), "model");
  EXPECT_NE(std::string(e.what()).find("gpt-9000"), std::string::npos);
}

TEST(Scenario, BatchThatDoesNotDivideNamesTheBatchLine) {
  const InputError e = load_error(replaced(kGood, "global_batch_size: 64", "global_batch_size: 60"));
  EXPECT_EQ(e.line(), 5);
  EXPECT_EQ(e.field(), "training.global_batch_size");
  EXPECT_NE(std::string(e.what()).find("not divisible"), std::string::npos);
}

TEST(Scenario, MissingFieldIsNamed) {
  const InputError e = load_error(replaced(kGood, "  global_batch_size: 64\n", ""));
  EXPECT_EQ(e.field(), "training.global_batch_size");
  EXPECT_EQ(e.line(), 4);  // the section that lacks it
  EXPECT_NE(std::string(e.what()).find("missing"), std::string::npos);
}

TEST(Scenario, YamlSyntaxErrorGivesTheLine) {
  const InputError e = load_error(replaced(kGood, "  micro_batch_size: 8\n", "  micro_batch_size: [8\n"));
  EXPECT_GE(e.line(), 6);
  EXPECT_NE(std::string(e.what()).find("syntax"), std::string::npos);
}

// Megatron-Core's overlaps have the prerequisites Megatron asserts: --tp-comm-overlap needs
// sequence parallelism, --overlap-param-gather the distributed optimizer (ZeRO-1/2).
TEST(Scenario, TensorParallelCommunicationOverlapWithoutSequenceParallelismNamesItsLine) {
  const std::string hybrid = replaced(kGood, "  type: data_parallel\n  data_parallel_size: 8\n",
                                      "  type: hybrid\n  tensor_model_parallel_size: 8\n  tp_comm_overlap: true\n");
  const InputError e = load_error(hybrid);
  EXPECT_EQ(e.field(), "strategy.tp_comm_overlap");
  EXPECT_EQ(e.line(), 11);
  EXPECT_NE(std::string(e.what()).find("sequence_parallel"), std::string::npos) << e.what();
}

TEST(Scenario, ParameterGatherOverlapWithoutZeroNamesItsLine) {
  const std::string hybrid = replaced(kGood, "  type: data_parallel\n", "  type: hybrid\n  overlap_param_gather: true\n");
  const InputError e = load_error(hybrid);
  EXPECT_EQ(e.field(), "strategy.overlap_param_gather");
  EXPECT_EQ(e.line(), 10);
  EXPECT_NE(std::string(e.what()).find("zero_stage 1 or 2"), std::string::npos) << e.what();
}

// `use:` takes whole nodes of named groups: a what-if on part of a cluster.
const char* kMixed =
    "name: part\n"                                           // 1
    "model: gpt2-124m\n"                                     // 2
    "cluster: mixed-h100-a100-64\n"                          // 3
    "use: {h100: 16, a100: 8}\n"                             // 4
    "training: { global_batch_size: 48, micro_batch_size: 2, seq_length: 1024 }\n"  // 5
    "strategy: { type: data_parallel, data_parallel_size: 24 }\n";  // 6

TEST(Scenario, UseSelectsWholeNodesOfNamedGroups) {
  const Scenario s = load_scenario(write_temp("part.yaml", kMixed));
  EXPECT_EQ(s.cluster.device_count(), 24);
  ASSERT_EQ(s.cluster.groups.size(), 2u);
  EXPECT_EQ(s.cluster.groups[0].node_count * s.cluster.groups[0].devices_per_node, 16);
  EXPECT_EQ(s.cluster.groups[1].node_count * s.cluster.groups[1].devices_per_node, 8);
  EXPECT_EQ(s.use.at("h100"), 16);
  // A group left out is not used.
  const Scenario h100 = load_scenario(write_temp("h100.yaml", replaced(kMixed, "{h100: 16, a100: 8}", "{h100: 24}")));
  ASSERT_EQ(h100.cluster.groups.size(), 1u);
  EXPECT_EQ(h100.cluster.groups[0].name, "h100");
}

TEST(Scenario, UseOfAnUnknownGroupOrPartOfANodeNamesTheField) {
  const InputError unknown = load_error(replaced(kMixed, "a100: 8", "b200: 8"));
  EXPECT_EQ(unknown.line(), 4);
  EXPECT_EQ(unknown.field(), "use.b200");
  EXPECT_NE(std::string(unknown.what()).find("h100, a100"), std::string::npos) << unknown.what();
  const InputError partial = load_error(replaced(kMixed, "a100: 8", "a100: 4"));
  EXPECT_EQ(partial.field(), "use.a100");
  EXPECT_NE(std::string(partial.what()).find("whole nodes"), std::string::npos) << partial.what();
}

// Local SGD keeps every replica's whole optimizer state: not with ZeRO.
TEST(Scenario, LocalSgdWithZeroOrAZeroPeriodNamesItsLine) {
  const InputError hybrid =
      load_error(replaced(kGood, "  type: data_parallel\n", "  type: hybrid\n  zero_stage: 1\n  local_sgd_steps: 4\n"));
  EXPECT_EQ(hybrid.field(), "strategy.local_sgd_steps");
  EXPECT_EQ(hybrid.line(), 11);
  EXPECT_NE(std::string(hybrid.what()).find("zero_stage 0"), std::string::npos) << hybrid.what();
  const InputError zero = load_error(replaced(kGood, "  data_parallel_size: 8\n", "  data_parallel_size: 8\n  local_sgd_steps: 0\n"));
  EXPECT_EQ(zero.field(), "strategy.local_sgd_steps");
}

// Hierarchical local SGD's blocks divide the replicas, and come with local SGD.
TEST(Scenario, LocalSgdBlocksThatDoNotDivideTheReplicasNameTheirLine) {
  const InputError uneven = load_error(
      replaced(kGood, "  data_parallel_size: 8\n", "  data_parallel_size: 8\n  local_sgd_steps: 4\n  local_sgd_group_size: 3\n"));
  EXPECT_EQ(uneven.field(), "strategy.local_sgd_group_size");
  EXPECT_EQ(uneven.line(), 12);
  const InputError synchronous =
      load_error(replaced(kGood, "  data_parallel_size: 8\n", "  data_parallel_size: 8\n  local_sgd_group_size: 4\n"));
  EXPECT_EQ(synchronous.field(), "strategy.local_sgd_group_size");
  EXPECT_NE(std::string(synchronous.what()).find("local_sgd_steps > 1"), std::string::npos) << synchronous.what();
  const Scenario fine = load_scenario(write_temp(
      "blocks.yaml", replaced(kGood, "  data_parallel_size: 8\n", "  data_parallel_size: 8\n  local_sgd_steps: 4\n  local_sgd_group_size: 4\n")));
  EXPECT_EQ(fine.parallel.local_sgd_group_size, 4);
}

// Context parallelism splits a transformer's sequences in the hybrid strategy: not data_parallel,
// not a learned position table, not a sequence that does not cut into 2·cp chunks.
TEST(Scenario, ContextParallelismThatCannotSplitTheSequenceNamesItsField) {
  const InputError dp = load_error(replaced(kGood, "  data_parallel_size: 8\n", "  data_parallel_size: 4\n  context_parallel_size: 2\n"));
  EXPECT_EQ(dp.field(), "strategy.context_parallel_size");
  EXPECT_NE(std::string(dp.what()).find("hybrid"), std::string::npos) << dp.what();
  const std::string hybrid = replaced(kGood, "  type: data_parallel\n  data_parallel_size: 8\n",
                                      "  type: hybrid\n  data_parallel_size: 4\n  context_parallel_size: 2\n");
  const InputError learned = load_error(hybrid);
  EXPECT_EQ(learned.field(), "strategy.context_parallel_size");
  EXPECT_NE(std::string(learned.what()).find("rope"), std::string::npos) << learned.what();
  const std::string llama = replaced(replaced(hybrid, "model: gpt2-124m\n", "model: {preset: llama3-8b, num_layers: 2}\n"),
                                     "  seq_length: 1024\n", "  seq_length: 1030\n");
  const InputError chunks = load_error(llama);
  EXPECT_EQ(chunks.field(), "strategy.context_parallel_size");
  EXPECT_NE(std::string(chunks.what()).find("2 x 2 chunks"), std::string::npos) << chunks.what();
  const Scenario fine = load_scenario(write_temp("cp.yaml", replaced(llama, "  seq_length: 1030\n", "  seq_length: 1024\n")));
  EXPECT_EQ(fine.parallel.context_parallel_size, 2);
}

// ZB-H1 reduces gradients once their W passes are done: not with ZeRO-2/3's per-backward reductions.
TEST(Scenario, ZeroBubbleWithZeroTwoNamesTheSchedule) {
  const InputError e = load_error(replaced(kGood, "  type: data_parallel\n  data_parallel_size: 8\n",
                                           "  type: hybrid\n  data_parallel_size: 4\n  pipeline_model_parallel_size: 2\n"
                                           "  pipeline_schedule: zb_h1\n  zero_stage: 2\n"));
  EXPECT_EQ(e.field(), "strategy.pipeline_schedule");
  EXPECT_NE(std::string(e.what()).find("zero_stage"), std::string::npos) << e.what();
}

// ZB-V's V is two chunks per stage: taken as its default, and any other count refused at its field.
TEST(Scenario, ZeroBubbleVRunsTwoChunksPerStageAndRefusesAnotherCount) {
  const std::string zb_v = "  type: hybrid\n  data_parallel_size: 4\n  pipeline_model_parallel_size: 2\n"
                           "  pipeline_schedule: zb_v\n";
  const Scenario s = load_scenario(write_temp("zbv.yaml", replaced(kGood, "  type: data_parallel\n  data_parallel_size: 8\n", zb_v)));
  EXPECT_EQ(s.hybrid.schedule, PipelineSchedule::zb_v);
  EXPECT_EQ(s.hybrid.virtual_stages, 2);
  EXPECT_NE(make_strategy(s)->name().find("zb_v v=2"), std::string::npos) << make_strategy(s)->name();
  const InputError e = load_error(replaced(kGood, "  type: data_parallel\n  data_parallel_size: 8\n",
                                           zb_v + "  virtual_pipeline_model_parallel_size: 3\n"));
  EXPECT_EQ(e.field(), "strategy.virtual_pipeline_model_parallel_size");
}

TEST(Scenario, UnknownKnobIsRefused) {
  const InputError e = load_error(replaced(kGood, "  data_parallel_size: 8\n", "  data_paralel_size: 8\n"));
  EXPECT_EQ(e.line(), 10);
  EXPECT_EQ(e.field(), "strategy.data_paralel_size");
}

TEST(Scenario, NegativeBandwidthInTheClusterNamesTheClusterFile) {
  const std::string cluster = write_temp("neg-cluster.yaml",
                                         "name: neg\n"
                                         "node_groups:\n"
                                         "  - name: h100\n"
                                         "    device: h100-sxm\n"
                                         "    nodes: 1\n"
                                         "    devices_per_node: 8\n"
                                         "    intra_node: { fabric: nvswitch, bandwidth_gb_per_s: -450, latency_us: 1.0 }\n");
  const InputError e = load_error(replaced(kGood, "cluster: tiny-h100", "cluster: neg-cluster.yaml"));
  EXPECT_EQ(e.file(), cluster);
  EXPECT_EQ(e.line(), 7);
  EXPECT_NE(e.field().find("bandwidth"), std::string::npos);
}

TEST(Scenario, TooManyDevicesForTheClusterIsRefused) {
  const InputError e = load_error(replaced(kGood, "data_parallel_size: 8", "data_parallel_size: 16"));
  EXPECT_EQ(e.line(), 10);
  EXPECT_NE(std::string(e.what()).find("has 8"), std::string::npos);
}

TEST(Scenario, MissingFileIsAnInputError) {
  try {
    load_scenario("/nonexistent/scenario.yaml");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), "/nonexistent/scenario.yaml");
  }
}

}  // namespace
}  // namespace tandem
