// Local SGD in the simulator: replicas exchange nothing between averagings, so on a cluster whose
// gradient all-reduce dominates (GPT-2 1.5B, one sequence per GPU, 64 H100 over 100 Gb/s Ethernet) a period of H steps costs less
// than H synchronous steps; the mean is taken over whole periods (Strategy::iteration_period),
// and the averaging step is the period's slowest. Hierarchical local SGD (blocks of a node's GPUs
// synchronous every step) sits between the two.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>

#include "tests/sim/sim_test_support.hpp"

namespace tandem {
namespace {

struct Steps {
  Seconds mean_s = 0, slowest_s = 0, fastest_s = 0;
  std::size_t measured = 0;
};

Steps simulate(int local_sgd_steps, int local_sgd_group_size = 1) {
  const std::string text =
      "name: local-sgd\n"
      "model: gpt2-1.5b\n"
      "cluster: h100-64-ethernet-100g\n"
      "training: { global_batch_size: 64, micro_batch_size: 1, seq_length: 1024 }\n"
      "strategy: { type: data_parallel, data_parallel_size: 64, local_sgd_steps: " +
      std::to_string(local_sgd_steps) + ", local_sgd_group_size: " + std::to_string(local_sgd_group_size) + " }\n";
  std::istringstream in = sim_test::traced_figures(text, [](const sim::SimulationResult& r, std::ostream& out) {
    const auto [fastest, slowest] = std::minmax_element(r.iteration_times_s.begin(), r.iteration_times_s.end());
    out << r.iteration_time_s << " " << *slowest << " " << *fastest << " " << r.iteration_times_s.size();
  });
  Steps s;
  in >> s.mean_s >> s.slowest_s >> s.fastest_s >> s.measured;
  return s;
}

TEST(LocalSgdSim, APeriodWithoutGradientExchangeIsFasterOnASlowNetwork) {
  const Steps sync = simulate(1), local = simulate(4);
  EXPECT_EQ(sync.measured, 1u);
  EXPECT_EQ(local.measured, 4u);  // one iteration asked: a whole period measured
  EXPECT_LT(local.mean_s, 0.8 * sync.mean_s) << local.mean_s << " s vs " << sync.mean_s << " s";
  EXPECT_GT(local.slowest_s, 1.5 * local.fastest_s);  // the averaging step
}

// Hierarchical local SGD with a node's 8 GPUs per block: every step all-reduces inside the node
// (NVLink), only the averaging crosses the Ethernet. Dearer than plain local SGD, far cheaper than
// synchronous data parallelism.
TEST(LocalSgdSim, BlocksInsideANodeAddOnlyTheirNvlinkReductions) {
  const Steps sync = simulate(1), local = simulate(4), blocks = simulate(4, 8);
  EXPECT_EQ(blocks.measured, 4u);
  EXPECT_GT(blocks.mean_s, local.mean_s);
  // What synchronous steps add over plain local SGD is the Ethernet all-reduce; the blocks add
  // a small part of it (the same computation and optimizer step run in all three).
  EXPECT_LT(blocks.mean_s - local.mean_s, 0.25 * (sync.mean_s - local.mean_s))
      << "blocks " << blocks.mean_s << " s, local " << local.mean_s << " s, sync " << sync.mean_s << " s";
  EXPECT_LT(blocks.fastest_s - local.fastest_s, 0.1 * (sync.mean_s - local.fastest_s))
      << "a step inside the node costs a fraction of an all-reduce over Ethernet";
}

}  // namespace
}  // namespace tandem
