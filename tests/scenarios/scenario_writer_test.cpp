// The scenario writer: a written scenario loads back to the same model, training, strategy and
// simulation options — the search's winner runs unchanged in `simulate` and `run`.
#include <gtest/gtest.h>

#include <filesystem>

#include "scenarios/candidate_scenario.hpp"
#include "scenarios/scenario_writer.hpp"

namespace tandem {
namespace {

namespace fs = std::filesystem;

Scenario round_trip(const Scenario& s, const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("tandem-writer-test-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / name).string();
  write_scenario(s, path, "a header\nof two lines");
  return load_scenario(path);
}

void expect_same(const Scenario& a, const Scenario& b) {
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.model.name(), b.model.name());
  EXPECT_EQ(make_model(a.model)->describe().parameter_count, make_model(b.model)->describe().parameter_count);
  EXPECT_EQ(make_model(a.model)->describe().model_flops_per_token, make_model(b.model)->describe().model_flops_per_token);
  EXPECT_EQ(a.cluster.name, b.cluster.name);
  EXPECT_EQ(a.cluster.device_count(), b.cluster.device_count());
  EXPECT_EQ(a.training.global_batch_size, b.training.global_batch_size);
  EXPECT_EQ(a.training.micro_batch_size, b.training.micro_batch_size);
  EXPECT_EQ(a.training.seq_length, b.training.seq_length);
  EXPECT_EQ(a.training.precision, b.training.precision);
  EXPECT_EQ(a.training.lr, b.training.lr);
  EXPECT_EQ(a.training.weight_decay, b.training.weight_decay);
  EXPECT_EQ(a.strategy_type, b.strategy_type);
  EXPECT_EQ(candidate_of(a).key(), candidate_of(b).key());
  EXPECT_EQ(a.parallel.ddp_bucket_size, b.parallel.ddp_bucket_size);
  EXPECT_EQ(a.parallel.overlap_grad_reduce, b.parallel.overlap_grad_reduce);
  EXPECT_EQ(a.hybrid.layers_per_stage, b.hybrid.layers_per_stage);
  EXPECT_EQ(a.simulation.iterations, b.simulation.iterations);
  EXPECT_EQ(a.simulation.warmup_iterations, b.simulation.warmup_iterations);
  EXPECT_EQ(a.simulation.collective_fidelity, b.simulation.collective_fidelity);
  EXPECT_EQ(a.simulation.algorithm, b.simulation.algorithm);
  EXPECT_EQ(a.simulation.compute_fidelity, b.simulation.compute_fidelity);
  EXPECT_EQ(make_strategy(a)->name(), make_strategy(b)->name());
}

TEST(ScenarioWriter, EveryBundledScenarioRoundTrips) {
  for (const char* name : {"gpt-tiny-localhost", "mlp-localhost", "mixed-3d-proportional", "gpt3-175b-3d",
                           "llama2-70b-h100", "search-tiny-h100"}) {
    SCOPED_TRACE(name);
    const Scenario s = load_scenario(name);
    expect_same(s, round_trip(s, std::string(name) + ".yaml"));
  }
}

TEST(ScenarioWriter, ASearchCandidateRoundTrips) {
  const Scenario base = load_scenario("search-gpt3-13b-mixed");
  search::Candidate c;
  c.tp = 8, c.pp = 3, c.dp = 8, c.micro_batch_size = 2, c.zero_stage = 1;
  c.recompute = Recompute::selective;
  c.sequence_parallel = true;
  c.partition = HybridConfig::Partition::proportional;
  c.batch_split = BatchSplit::proportional;
  c.order = RankOrder::tp_dp_pp;
  Scenario s = scenario_for(base, c);
  s.name = "winner";
  const Scenario back = round_trip(s, "winner.yaml");
  expect_same(s, back);
  EXPECT_EQ(candidate_of(back), c);
}

TEST(ScenarioWriter, ASearchCandidateWithExplicitLayersRoundTrips) {
  const Scenario base = load_scenario("search-gpt3-13b-mixed");
  search::Candidate c;
  c.tp = 8, c.pp = 3, c.dp = 8, c.micro_batch_size = 1, c.zero_stage = 1;
  c.layers_per_stage = {19, 13, 8};  // GPT-3 13B's 40 layers, fastest stage first
  Scenario s = scenario_for(base, c);
  s.name = "refined";
  const Scenario back = round_trip(s, "refined.yaml");
  expect_same(s, back);
  EXPECT_EQ(back.hybrid.layers_per_stage, c.layers_per_stage);
  EXPECT_EQ(candidate_of(back), c);
  const auto strategy = make_strategy(back);
  EXPECT_EQ(dynamic_cast<const HybridParallel&>(*strategy).layers_per_virtual_stage(), c.layers_per_stage);
}

TEST(ScenarioWriter, AnOverriddenPresetKeepsItsOverrides) {
  Scenario s = load_scenario("gpt-tiny-localhost");
  s.model.transformer.num_layers = 3;
  s.model.transformer.use_flash_attn = true;
  const Scenario back = round_trip(s, "override.yaml");
  EXPECT_EQ(back.model.transformer.num_layers, 3);
  EXPECT_TRUE(back.model.transformer.use_flash_attn);
  EXPECT_EQ(back.model.transformer.hidden_size, s.model.transformer.hidden_size);
}

}  // namespace
}  // namespace tandem
