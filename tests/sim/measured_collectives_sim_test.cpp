// Collectives among the threads of one machine cost what `tandem calibrate` measured there
// (NodeGroup::collective_costs): every member waits for the last to arrive, which does the work
// in latency + bytes / bandwidth. Without a measured cost the collective's transfers cross the
// node's links as before.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <tuple>

#include "scenarios/scenario.hpp"
#include "sim/simulation.hpp"
#include "tests/sim/sim_test_support.hpp"

namespace tandem {
namespace {

constexpr Seconds kLatency_s = 50e-6;
constexpr BytesPerSecond kBandwidth = 1e9;

// Per tensor-parallel all-reduce instance (the data-parallel groups have one member), the gap
// between any member's end and (last arrival + measured cost): the largest over the forward ones
// (both hosts wait for them: nothing computes beside), the smallest and largest over all, and how
// many instances there were.
struct Check {
  double worst_forward_gap_s = 0;
  double least_gap_s = 1;
  double most_gap_s = 0;
  int instances = 0;
};

Check simulate_tp2(bool measured) {
  auto child = sim_test::run_in_child([=] {
    sim_test::quiet_simgrid();
    Scenario s = load_scenario("gpt-tiny-localhost");
    NodeGroup& g = s.cluster.groups.front();
    g.shared_cores = 2;
    if (measured) g.collective_costs = {CollectiveCost{"all_reduce", 2, kLatency_s, kBandwidth}};
    s.strategy_type = "hybrid";
    s.parallel.tensor_model_parallel_size = 2;
    s.parallel.data_parallel_size = 1;
    const sim::SimulationResult r = sim_test::simulate_traced(s, /*warmup=*/1, /*iterations=*/2);
    std::map<std::tuple<int, std::string>, std::vector<TraceRecord>> instances;
    for (const TraceRecord& t : r.trace.records)
      if (t.kind == OpKind::all_reduce && t.group_size == 2) instances[{t.iteration, t.op_id}].push_back(t);
    double worst_forward = 0, least = 1, most = 0;
    for (const auto& [key, members] : instances) {
      Seconds last_arrival = 0;
      for (const TraceRecord& m : members) last_arrival = std::max(last_arrival, m.start_s);
      const Seconds expected_end = last_arrival + kLatency_s + members.front().bytes / kBandwidth;
      for (const TraceRecord& m : members) {
        const double gap = m.end_s - expected_end;
        if (m.phase == Phase::forward) worst_forward = std::max(worst_forward, std::abs(gap));
        least = std::min(least, gap);
        most = std::max(most, gap);
      }
    }
    char line[128];
    std::snprintf(line, sizeof line, "%.17g %.17g %.17g %zu", worst_forward, least, most, instances.size());
    return std::string(line);
  });
  if (!child.ok) throw std::runtime_error(child.describe());
  Check c;
  std::istringstream in(child.output);
  in >> c.worst_forward_gap_s >> c.least_gap_s >> c.most_gap_s >> c.instances;
  return c;
}

TEST(MeasuredCollectives, EveryMemberEndsTheMeasuredCostAfterTheLastArrival) {
  const Check c = simulate_tp2(/*measured=*/true);
  EXPECT_GT(c.instances, 10);
  EXPECT_LT(c.worst_forward_gap_s, 1e-9);
  EXPECT_GT(c.least_gap_s, -1e-9) << "never faster than measured";
}

// On shared cores the collective's copies are core work: the backward all-reduces of the input
// gradients, issued while both ranks compute their weight gradients, share the two cores with
// those GEMMs and end later than measured alone.
TEST(MeasuredCollectives, ACollectiveBesideComputingRanksSharesTheirCores) {
  const Check c = simulate_tp2(/*measured=*/true);
  EXPECT_GT(c.most_gap_s, 1e-6);
}

TEST(MeasuredCollectives, WithoutAMeasuredCostTheTransfersCrossTheLinks) {
  const Check c = simulate_tp2(/*measured=*/false);
  EXPECT_GT(c.instances, 10);
  EXPECT_GT(c.worst_forward_gap_s, 1e-6);  // the link's few microseconds, not the 50 us measured above
}

}  // namespace
}  // namespace tandem
