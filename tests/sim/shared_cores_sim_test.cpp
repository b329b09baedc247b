// CPU devices that are threads on one machine share its cores (NodeGroup::shared_cores), and
// other programs may keep some of them busy (background_load): the simulator shares the cores
// fairly among the ranks that compute at the same time.
#include <gtest/gtest.h>

#include <string>

#include "scenarios/scenario.hpp"
#include "sim/simulation.hpp"
#include "tests/sim/sim_test_support.hpp"

namespace tandem {
namespace {

struct Outcome {
  Seconds iteration_s = 0;
  Seconds compute_s = 0;  // rank 0's, per iteration, at full speed
};

Outcome simulate_dp(int ranks, int shared_cores, double background_load) {
  auto child = sim_test::run_in_child([=] {
    sim_test::quiet_simgrid();
    Scenario s = load_scenario("gpt-tiny-localhost");
    NodeGroup& g = s.cluster.groups.front();
    g.devices_per_node = ranks;
    g.shared_cores = shared_cores;
    g.background_load = background_load;
    s.parallel.data_parallel_size = ranks;
    s.training.global_batch_size = 4 * ranks;
    auto strategy = make_strategy(s);
    sim::SimulationOptions options;
    const sim::SimulationResult r = sim::simulate(*strategy, s.cluster, options);
    return std::to_string(r.iteration_time_s) + " " + std::to_string(r.ranks[0].compute_s);
  });
  if (!child.ok) throw std::runtime_error(child.describe());
  Outcome o;
  const auto space = child.output.find(' ');
  o.iteration_s = std::stod(child.output.substr(0, space));
  o.compute_s = std::stod(child.output.substr(space + 1));
  return o;
}

TEST(SharedCores, AsManyCoresAsRanksChangesNothing) {
  const Outcome own = simulate_dp(4, 0, 0);
  const Outcome shared = simulate_dp(4, 4, 0);
  EXPECT_NEAR(shared.iteration_s / own.iteration_s, 1.0, 1e-6);
}

TEST(SharedCores, FourRanksOnTwoCoresTakeTwiceTheComputeTime) {
  const Outcome own = simulate_dp(4, 0, 0);
  const Outcome shared = simulate_dp(4, 2, 0);
  // Every rank computes at half speed; communication is not slowed down.
  EXPECT_NEAR(shared.iteration_s, own.iteration_s + own.compute_s, 0.02 * own.iteration_s);
}

TEST(SharedCores, BackgroundLoadTakesItsCoresFromTheRanks) {
  const Outcome one_core = simulate_dp(2, 1, 0);
  const Outcome loaded = simulate_dp(2, 2, 1.0);
  EXPECT_NEAR(loaded.iteration_s / one_core.iteration_s, 1.0, 0.01);
  const Outcome idle = simulate_dp(2, 2, 0);
  EXPECT_GT(loaded.iteration_s, 1.5 * idle.iteration_s);
}

}  // namespace
}  // namespace tandem
