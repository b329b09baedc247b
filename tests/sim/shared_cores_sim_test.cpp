// CPU devices that are threads on one machine share its cores (NodeGroup::shared_cores), and
// other programs may keep some of them busy (background_load): ranks beyond the cores take turns
// on them (sim/core_turns.hpp), paying the measured cost of getting a core back.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "scenarios/scenario.hpp"
#include "sim/simulation.hpp"
#include "tests/sim/sim_test_support.hpp"

namespace tandem {
namespace {

struct Outcome {
  Seconds iteration_s = 0;
  Seconds compute_s = 0;  // rank 0's, per iteration, at full speed
  int most_computing = 0;  // the most ranks computing at one moment (from the trace)
};

struct Machine {
  int ranks = 2, shared_cores = 0;
  double background_load = 0;
  Seconds core_handoff_s = 0, core_wake_s = 0;
  int tp = 1;  // tensor-parallel pairs instead of data parallel replicas
  double alone_kernel_time_fraction = 1;
  double slowest_core_kernel_time_factor = 1;
};

// Most records overlapping at one instant: compute ops sorted by start, ends in a heap.
int most_overlapping(std::vector<TraceRecord> ops) {
  std::sort(ops.begin(), ops.end(), [](const auto& a, const auto& b) { return a.start_s < b.start_s; });
  std::vector<Seconds> ends;
  int most = 0;
  for (const TraceRecord& r : ops) {
    std::erase_if(ends, [&](Seconds e) { return e <= r.start_s + 1e-12; });
    ends.push_back(r.end_s);
    most = std::max(most, static_cast<int>(ends.size()));
  }
  return most;
}

Outcome simulate_on(const Machine& m) {
  auto child = sim_test::run_in_child([=] {
    sim_test::quiet_simgrid();
    Scenario s = load_scenario("gpt-tiny-localhost");
    NodeGroup& g = s.cluster.groups.front();
    g.devices_per_node = m.ranks;
    g.shared_cores = m.shared_cores;
    g.background_load = m.background_load;
    g.device.core_handoff_s = m.core_handoff_s;
    g.device.core_wake_s = m.core_wake_s;
    g.device.alone_kernel_time_fraction = m.alone_kernel_time_fraction;
    g.device.slowest_core_kernel_time_factor = m.slowest_core_kernel_time_factor;
    if (m.tp > 1) s.strategy_type = "hybrid";
    s.parallel.tensor_model_parallel_size = m.tp;
    s.parallel.data_parallel_size = m.ranks / m.tp;
    s.training.global_batch_size = 4 * s.parallel.data_parallel_size;
    constexpr int kIterations = 4;
    const sim::SimulationResult r = sim_test::simulate_traced(s, /*warmup=*/2, kIterations);
    std::vector<TraceRecord> compute;
    for (const TraceRecord& t : r.trace.records)
      if (t.stream == Stream::compute && t.end_s > t.start_s) compute.push_back(t);
    char line[128];
    std::snprintf(line, sizeof line, "%.17g %.17g %d", r.iteration_time_s, r.ranks[0].compute_s / kIterations,
                  most_overlapping(compute));
    return std::string(line);
  });
  if (!child.ok) throw std::runtime_error(child.describe());
  Outcome o;
  std::istringstream in(child.output);
  in >> o.iteration_s >> o.compute_s >> o.most_computing;
  return o;
}

Outcome simulate_dp(int ranks, int shared_cores, double background_load) {
  return simulate_on(Machine{ranks, shared_cores, background_load});
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
  const Outcome loaded = simulate_dp(2, 2, 1.0);
  const Outcome idle = simulate_dp(2, 2, 0);
  EXPECT_GT(loaded.iteration_s, 1.5 * idle.iteration_s);
  // One core's worth either way: two ranks sharing what the load leaves of two cores, or taking
  // turns on one (which also waits at each turn: a little slower).
  const Outcome one_core = simulate_dp(2, 1, 0);
  EXPECT_GE(one_core.iteration_s, loaded.iteration_s * 0.99);
  EXPECT_LT(one_core.iteration_s, loaded.iteration_s * 1.25);
}

// Calibration times kernels with every core busy; a rank whose neighbours' cores idle runs them in
// the measured alone fraction of that time, and in between the slowdown grows with the busy cores
// (sim/core_contention.hpp).
TEST(SharedCores, KernelsRunAtTheAloneFractionWithIdleNeighboursAndAsCalibratedWithEveryCoreBusy) {
  const auto compute_s = [](int ranks, int cores, double fraction, double load = 0) {
    Machine m{ranks, cores, load};
    m.alone_kernel_time_fraction = fraction;
    return simulate_on(m).compute_s;
  };
  EXPECT_NEAR(compute_s(1, 2, 0.8) / compute_s(1, 2, 1.0), 0.8, 1e-9);
  EXPECT_NEAR(compute_s(2, 2, 0.8) / compute_s(2, 2, 1.0), 1.0, 1e-9);
  EXPECT_NEAR(compute_s(2, 4, 0.7) / compute_s(2, 4, 1.0), 0.7 + 0.3 / 3, 1e-9);
  // Other programs keep cores busy too: one rank beside a core's worth of load on two cores.
  EXPECT_NEAR(compute_s(1, 2, 0.8, 1.0) / compute_s(1, 2, 1.0, 1.0), 1.0, 1e-9);
}

// Ranks that each hold a core go at the slowest core's pace; one rank alone, or ranks taking
// turns on every core, at the cores' mean (the curves).
TEST(SharedCores, RanksWithACoreEachGoAtTheSlowestCoresPace) {
  const auto compute_s = [](int ranks, int cores, double factor) {
    Machine m{ranks, cores};
    m.slowest_core_kernel_time_factor = factor;
    return simulate_on(m).compute_s;
  };
  EXPECT_NEAR(compute_s(2, 2, 1.2) / compute_s(2, 2, 1.0), 1.2, 1e-9);
  EXPECT_NEAR(compute_s(1, 2, 1.2) / compute_s(1, 2, 1.0), 1.0, 1e-9);
  EXPECT_NEAR(compute_s(4, 2, 1.2) / compute_s(4, 2, 1.0), 1.0, 1e-9);
}

TEST(SharedCores, RanksBeyondTheCoresTakeTurnsNeverComputingMoreThanTheCoresAtOnce) {
  EXPECT_EQ(simulate_on(Machine{4, 2, 0, 0, 0, 2}).most_computing, 2);  // two tensor-parallel pairs
  EXPECT_EQ(simulate_on(Machine{4, 0, 0, 0, 0, 2}).most_computing, 4);  // a device each
}

TEST(SharedCores, TakingACoreBackCostsTheMeasuredHandOffAndWakeUpOnlyWhenRanksOutnumberCores) {
  const Seconds handoff_s = 5e-6, wake_s = 20e-6;
  // Two ranks on two cores never give a core up: the costs change nothing.
  const Outcome two_free = simulate_on(Machine{2, 2, 0, 0, 0, 2});
  const Outcome two_costed = simulate_on(Machine{2, 2, 0, handoff_s, wake_s, 2});
  EXPECT_DOUBLE_EQ(two_costed.iteration_s, two_free.iteration_s);
  // Four ranks on two cores give their core up at every wait and pay to get one back.
  const Outcome four_free = simulate_on(Machine{4, 2, 0, 0, 0, 2});
  const Outcome four_costed = simulate_on(Machine{4, 2, 0, handoff_s, wake_s, 2});
  EXPECT_GT(four_costed.iteration_s, four_free.iteration_s + 10 * handoff_s);
  // Bounded by one wake-up per op of every rank (no wait is charged twice).
  EXPECT_LT(four_costed.iteration_s, four_free.iteration_s + 4 * 600 * wake_s);
}

TEST(SharedCores, TurnTakingIsDeterministic) {
  const Machine m{4, 2, 0, 3e-6, 15e-6, 2};
  EXPECT_EQ(simulate_on(m).iteration_s, simulate_on(m).iteration_s);
}

}  // namespace
}  // namespace tandem
