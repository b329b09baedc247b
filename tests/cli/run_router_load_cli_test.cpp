// Routing imbalance measured from real router outputs (issue 19): `run` on the CPU backend adds up,
// per forward routing of every rank, the busiest expert's picks over the mean, and reports it
// (`moe_router_load` in --json, a `router load` line): the ratio model.moe_router_load_imbalance
// prices dropless routing with in the simulator. A router trained without Switch's
// load-balancing loss collapses onto few experts; with it the load spreads.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>

#include "tests/cli/cli_test_support.hpp"

namespace tandem {
namespace {

// A tiny GPT whose blocks hold 4 experts, top-2 (a ratio in [1, 4/2]), trained on the GPL-3 text
// every Debian machine ships, dropless.
nlohmann::json router_load(const std::string& name, double aux_loss_coeff) {
  const std::string text =
      "name: moe-router\n"
      "model: {name: gpt-tiny-moe, num_layers: 2, hidden_size: 64, num_attention_heads: 4, vocab_size: 256,\n"
      "        seq_length: 32, bias: false, num_moe_experts: 4, moe_router_topk: 2, moe_aux_loss_coeff: " +
      std::to_string(aux_loss_coeff) + "}\n"
      "cluster: localhost\n"
      "training: {global_batch_size: 8, micro_batch_size: 4, seq_length: 32, precision: fp32, lr: 0.001}\n"
      "strategy: {type: data_parallel, data_parallel_size: 2}\n";
  const std::string path = cli_test::write_in_fresh_dir("tandem-router-load", name, "moe.yaml", text);
  const cli_test::CliRun run =
      cli_test::run_tandem("run " + path + " --iterations 40 --corpus /usr/share/common-licenses/GPL-3 --json -");
  EXPECT_EQ(run.status, 0) << run.err;
  if (run.status != 0) return {};
  const nlohmann::json summary = nlohmann::json::parse(run.out);
  return summary.value("moe_router_load", nlohmann::json::object());
}

TEST(RunRouterLoadCli, TheLoadBalancingLossSpreadsTheMeasuredRouterLoad) {
  const nlohmann::json unbalanced = router_load("none", 0.0);
  const nlohmann::json balanced = router_load("switch", 1.0);
  ASSERT_TRUE(unbalanced.contains("routings")) << unbalanced;
  ASSERT_TRUE(balanced.contains("routings")) << balanced;
  // Every forward routing counted: 40 steps x 2 ranks x 2 blocks of one micro-batch each.
  EXPECT_EQ(unbalanced["routings"].get<int>(), balanced["routings"].get<int>());
  EXPECT_GT(unbalanced["routings"].get<int>(), 0);
  for (const nlohmann::json& load : {unbalanced, balanced}) {
    EXPECT_GE(load["mean_busiest_over_mean"].get<double>(), 1.0);
    EXPECT_LE(load["largest_busiest_over_mean"].get<double>(), 2.0);
    EXPECT_LE(load["mean_busiest_over_mean"].get<double>(), load["largest_busiest_over_mean"].get<double>());
  }
  EXPECT_LT(balanced["mean_busiest_over_mean"].get<double>(), unbalanced["mean_busiest_over_mean"].get<double>() - 0.2)
      << "with the loss " << balanced << ", without " << unbalanced;
}

TEST(RunRouterLoadCli, AModelWithoutExpertsReportsNoRouterLoad) {
  const cli_test::CliRun run = cli_test::run_tandem("run gpt-tiny-localhost --iterations 2 --json -");
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_FALSE(nlohmann::json::parse(run.out).contains("moe_router_load"));
}

}  // namespace
}  // namespace tandem
