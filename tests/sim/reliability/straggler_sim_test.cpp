// Stragglers are made real in SimGrid: a slowed device's host computes slower and a slowed link
// carries less, so the simulated iteration feels them through the strategy's own synchronisation.
// MFU stays computed against the nominal peak.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "scenarios/prediction_inputs.hpp"
#include "scenarios/scenario.hpp"
#include "sim/prediction.hpp"
#include "sim/simulation.hpp"
#include "tests/sim/sim_test_support.hpp"

namespace tandem {
namespace {

// GPT-2 124M, data parallel over two 4-GPU H100 nodes (scenarios/gpt2-124m-dp8.yaml).
struct Outcome {
  double iteration_s = 0;
  double mfu = 0;
  std::vector<double> compute_s;  // each rank's kernels (without what overlapped collectives cost them)
};

Outcome simulate_with(const std::vector<sim::reliability::Straggler>& stragglers) {
  auto child = sim_test::run_in_child([&] {
    sim_test::quiet_simgrid();
    Scenario s = load_scenario("gpt2-124m-dp8");
    auto strategy = make_strategy(s);
    sim::SimulationOptions options = s.simulation;
    options.iterations = 1;
    options.stragglers = stragglers;
    const sim::SimulationResult r = sim::simulate(*strategy, s.cluster, options);
    const sim::Prediction p = sim::summarize(r, s.cluster, prediction_inputs(s, *strategy));
    nlohmann::json j;
    j["iteration_s"] = r.iteration_time_s;
    j["mfu"] = p.mfu;
    // The kernels' own time: the SMs overlapped collectives held (sim/comm_contention.hpp) cost
    // a rank more or less as a straggler moves its collectives.
    for (const sim::RankResult& rank : r.ranks) j["compute_s"].push_back(rank.compute_s - rank.contention_s);
    return j.dump();
  });
  EXPECT_TRUE(child.ok) << child.describe();
  if (!child.ok) return {};
  const auto j = nlohmann::json::parse(child.output);
  return {j["iteration_s"], j["mfu"], j["compute_s"].get<std::vector<double>>()};
}

TEST(StragglerSim, ASlowedDeviceComputesSlowerAndHoldsEveryReplicaBack) {
  const Outcome base = simulate_with({});
  const Outcome slow = simulate_with({{3, 1.5, 1.0}});
  ASSERT_EQ(slow.compute_s.size(), 8u);
  // Its own compute takes 1.5x as long on the slowed host, the others' does not change.
  EXPECT_NEAR(slow.compute_s[3] / base.compute_s[3], 1.5, 1e-9);
  EXPECT_NEAR(slow.compute_s[0] / base.compute_s[0], 1.0, 1e-9);
  // The gradient all-reduce waits for it: the iteration grows by at least most of its extra
  // compute (some of it overlaps communication that was exposed before).
  EXPECT_GT(slow.iteration_s - base.iteration_s, 0.5 * 0.8 * base.compute_s[3]);
  // MFU against the nominal peak: it falls exactly as the iteration grows.
  EXPECT_NEAR(slow.mfu / base.mfu, base.iteration_s / slow.iteration_s, 1e-9);
}

TEST(StragglerSim, ASlowedNicSlowsTheCollectivesThatCrossIt) {
  const Outcome base = simulate_with({});
  const Outcome slow = simulate_with({{5, 1.0, 0.1}});
  EXPECT_NEAR(slow.compute_s[5] / base.compute_s[5], 1.0, 1e-9);
  EXPECT_GT(slow.iteration_s, base.iteration_s * 1.01);
}

TEST(StragglerSim, SlowingIsDeterministic) {
  const Outcome a = simulate_with({{2, 1.25, 0.5}});
  const Outcome b = simulate_with({{2, 1.25, 0.5}});
  EXPECT_EQ(a.iteration_s, b.iteration_s);
  EXPECT_EQ(a.compute_s, b.compute_s);
}

}  // namespace
}  // namespace tandem
