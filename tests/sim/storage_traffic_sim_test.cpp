// Checkpoint writes as SimGrid flows (SimulationOptions::storage_writes, sim/storage_traffic.hpp):
// alone on a star they take exactly the closed form's max-min share (sim/reliability/
// checkpoint_cost.hpp); an oversubscribed spine, which the closed form does not see, slows them;
// beside training they slow the iterations that share their NICs, and are slowed by them.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "scenarios/scenario.hpp"
#include "sim/reliability/checkpoint_cost.hpp"
#include "sim/simulation.hpp"
#include "tests/sim/sim_test_support.hpp"

namespace tandem {
namespace {

constexpr Bytes kShard = 1e9;  // per rank

// GPT-2 124M data parallel over tiny-h100's 8 H100 (2 nodes x 4, one 50 GB/s NIC per GPU).
Scenario dp8() {
  Scenario s = load_scenario("goodput-gpt2-124m-straggler");
  s.simulation.stragglers.clear();
  return s;
}

// "iteration_s write_s" of one simulation in a child.
std::pair<double, double> simulate_writes(const Cluster& cluster, std::optional<sim::StorageWrites> writes) {
  const sim_test::SimResult r = sim_test::run_in_child([&] {
    const Scenario s = dp8();
    sim::SimulationOptions options = s.simulation;
    options.storage_writes = writes;
    const sim::SimulationResult result = sim::simulate(*make_strategy(s), cluster, options);
    char text[64];
    std::snprintf(text, sizeof text, "%.17g %.17g", result.iteration_time_s, result.storage_write_s);
    return std::string(text);
  });
  EXPECT_TRUE(r.ok) << r.describe();
  double iteration = 0, write = 0;
  std::sscanf(r.output.c_str(), "%lf %lf", &iteration, &write);
  return {iteration, write};
}

sim::StorageWrites writes_of(BytesPerSecond storage, bool alone, Bytes shard = kShard) {
  sim::StorageWrites w;
  w.bandwidth_bytes_per_s = storage;
  w.bytes_per_rank = shard;
  w.alone = alone;
  return w;
}

TEST(StorageTrafficSim, AloneOnAStarTheWritesTakeTheClosedFormsShare) {
  const Cluster cluster = find_cluster("tiny-h100");
  for (const BytesPerSecond storage : {100e9, 1000e9}) {  // storage-bound, then NIC-bound
    const auto [iteration, write] = simulate_writes(cluster, writes_of(storage, /*alone=*/true));
    sim::reliability::StorageSystem closed;
    closed.aggregate_bytes_per_s = storage;
    closed.per_node_bytes_per_s = cluster.node_uplink_bytes_per_s(0);
    const Seconds expected = sim::reliability::storage_transfer_s(closed, 8 * kShard, 2);
    EXPECT_NEAR(write, expected, 1e-3 * expected) << storage;  // path latencies: microseconds
    EXPECT_EQ(iteration, 0) << "alone: no training";
  }
}

TEST(StorageTrafficSim, APerNodePathCapsEachRanksShare) {
  sim::StorageWrites writes = writes_of(1000e9, /*alone=*/true);
  writes.rank_rate_cap_bytes_per_s = 1e9;  // a 4 GB/s storage path per 4-GPU node
  const auto [iteration, write] = simulate_writes(find_cluster("tiny-h100"), writes);
  EXPECT_NEAR(write, kShard / 1e9, 1e-3);
}

TEST(StorageTrafficSim, AnOversubscribedSpineSlowsTheWritesBelowTheClosedForm) {
  // One node per leaf, leaf uplinks at a quarter of the nodes' 200 GB/s.
  const auto path = std::filesystem::temp_directory_path() / ("tandem-storage-spine-" + std::to_string(::getpid()) + ".yaml");
  std::ofstream(path) << "name: spine\n"
                         "network: { topology: fat_tree, nodes_per_leaf: 1, oversubscription: 4, switch_latency_us: 0.5 }\n"
                         "node_groups:\n"
                         "  - name: h100\n"
                         "    device: h100-sxm\n"
                         "    nodes: 2\n"
                         "    devices_per_node: 4\n"
                         "    intra_node: { fabric: nvswitch, bandwidth_gb_per_s: 450, latency_us: 1.0 }\n"
                         "    nic: { bandwidth_gbit_per_s: 400, latency_us: 2.0 }\n";
  const Cluster cluster = find_cluster(path.string());
  std::filesystem::remove(path);
  const auto [iteration, write] = simulate_writes(cluster, writes_of(1000e9, /*alone=*/true));
  // Each node's 4 GB through its leaf's 50 GB/s uplink: 80 ms, where the closed form's node
  // links say 20 ms.
  EXPECT_NEAR(write, 4e9 / 50e9, 1e-3 * 0.08);
}

TEST(StorageTrafficSim, AWriteBesideTrainingSlowsTheIterationsAndIsSlowedByThem) {
  const Cluster cluster = find_cluster("tiny-h100");
  const auto plain = simulate_writes(cluster, std::nullopt);
  // 20 GB per rank: the write (0.4 s alone) outlasts the iterations (~40 ms), whose gradient
  // all-reduce crosses the same NICs.
  const auto alone = simulate_writes(cluster, writes_of(1000e9, /*alone=*/true, 20e9));
  const auto beside = simulate_writes(cluster, writes_of(1000e9, /*alone=*/false, 20e9));
  EXPECT_GT(beside.first, plain.first * 1.01) << plain.first << " -> " << beside.first;
  std::printf("iteration %.4f s -> %.4f s beside the write; write %.4f s alone -> %.4f s beside\n", plain.first,
              beside.first, alone.second, beside.second);
  EXPECT_GT(beside.second, alone.second) << alone.second << " -> " << beside.second;
  EXPECT_EQ(plain.second, 0);
}

}  // namespace
}  // namespace tandem
