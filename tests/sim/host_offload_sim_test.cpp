// ZeRO-Offload in the simulator (ParallelConfig::offload_optimizer): the node's host as SimGrid
// resources. A copy to the host crosses the device's PCIe link, which the device's NIC traffic
// also crosses; the host's optimizer step streams through the node's host memory, shared by the
// node's ranks; the optimizer state leaves the device's memory for the host's.
#include <gtest/gtest.h>
#include <simgrid/s4u.hpp>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "platforms/cluster.hpp"
#include "sim/cost_model.hpp"
#include "sim/platform_builder.hpp"
#include "sim/simulation.hpp"
#include "tests/sim/data_parallel_setup.hpp"
#include "tests/sim/sim_test_support.hpp"

namespace tandem {
namespace {

namespace s4u = simgrid::s4u;
namespace fs = std::filesystem;

constexpr double kLinkBytesPerS = 20e9;      // PCIe, below the NIC's 50 GB/s: the link binds
constexpr double kHostBytesPerS = 100e9;     // the node's host memory bandwidth
constexpr double kLinkLatencyS = 2e-6;

// `nodes` nodes of `per_node` H100s, NDR NICs, with a host of kHostBytesPerS behind PCIe links of
// kLinkBytesPerS.
std::string cluster_file(int nodes, int per_node, double host_bytes_per_s = kHostBytesPerS) {
  const fs::path path = fs::temp_directory_path() /
                        ("tandem-offload-" + std::to_string(::getpid()) + "-" + std::to_string(nodes) + "x" +
                         std::to_string(per_node) + "-" + std::to_string(static_cast<long long>(host_bytes_per_s)) + ".yaml");
  std::ofstream(path) << "name: offload-test\n"
                         "network: { topology: star, switch_latency_us: 0.5 }\n"
                         "node_groups:\n"
                         "  - name: h100\n"
                         "    device: h100-sxm\n"
                         "    nodes: " << nodes << "\n"
                         "    devices_per_node: " << per_node << "\n"
                         "    intra_node: { fabric: nvswitch, bandwidth_gb_per_s: 450, latency_us: 1.0 }\n"
                         "    nic: { bandwidth_gbit_per_s: 400, latency_us: 2.0 }\n"
                         "    host: { memory_gb: 1000, memory_bandwidth_gb_per_s: " << host_bytes_per_s / 1e9
                      << ", device_link: { bandwidth_gb_per_s: " << kLinkBytesPerS / 1e9
                      << ", latency_us: " << kLinkLatencyS * 1e6 << " } }\n";
  return path.string();
}

// ---- the platform: copies to the host and NIC traffic share the device's PCIe link ----

struct Flow {
  int src = 0;
  int dst = 0;  // a rank, or -1 - n for node n's host
  double bytes = 0;
};

std::vector<double> simulate_flows(const Cluster& cluster, const std::vector<Flow>& flows) {
  const auto result = sim_test::run_in_child([&] {
    s4u::Engine engine("host_offload_sim_test");
    sim_test::quiet_simgrid();
    sim::use_neutral_network_model();
    const sim::BuiltPlatform built = sim::build_platform(cluster, nullptr, /*node_hosts=*/true);
    auto host_of = [&](int id) { return id >= 0 ? built.hosts.at(id) : built.node_hosts.at(-1 - id); };
    std::vector<double> done(flows.size(), -1);
    for (std::size_t i = 0; i < flows.size(); ++i)
      s4u::Actor::create("flow" + std::to_string(i), built.hosts.at(flows[i].src), [&, i] {
        s4u::Comm::sendto(host_of(flows[i].src), host_of(flows[i].dst), static_cast<std::uint64_t>(flows[i].bytes));
        done[i] = s4u::Engine::get_clock();
      });
    engine.run();
    return nlohmann::json(done).dump();
  });
  EXPECT_TRUE(result.ok) << result.describe();
  if (!result.ok) return std::vector<double>(flows.size(), -1);
  return nlohmann::json::parse(result.output).get<std::vector<double>>();
}

TEST(HostOffloadPlatform, ACopyToTheHostTakesItsLatencyAndBytesOverTheDeviceLink) {
  const Cluster c = load_cluster(cluster_file(2, 4));
  const double S = 1e9;
  EXPECT_NEAR(simulate_flows(c, {{0, -1, S}})[0], kLinkLatencyS + S / kLinkBytesPerS, 1e-12);
  EXPECT_NEAR(simulate_flows(c, {{5, -2, S}})[0], kLinkLatencyS + S / kLinkBytesPerS, 1e-12);  // node 1's
}

// SimGrid shares a link among flows in inverse proportion to their routes' latencies (as it does
// every link of the platform): the copy (2 us) takes more of the PCIe link than the transfer to
// the other node (4.5 us), and the link is never idle while either has bytes to move.
TEST(HostOffloadPlatform, TheDeviceLinkIsSharedWithItsNicsTrafficNotWithOtherDevices) {
  const Cluster c = load_cluster(cluster_file(2, 4));
  const double S = 1e9;
  const double latency = c.path_latency_s(0, 4);
  // Alone, a transfer to the other node runs at the PCIe link's rate (narrower than the NIC).
  const double alone = simulate_flows(c, {{0, 4, S}})[0];
  EXPECT_NEAR(alone, latency + S / kLinkBytesPerS, 1e-12);
  // Beside a copy to the host from the same device: slowed, and the two together take the link's
  // time for both.
  const auto shared = simulate_flows(c, {{0, 4, S}, {0, -1, S}});
  EXPECT_GT(shared[0], alone + 0.2 * S / kLinkBytesPerS);
  EXPECT_NEAR(std::max(shared[0], shared[1]), 2 * S / kLinkBytesPerS, 1e-5);  // up to the latencies
  // Another device's copy leaves it alone.
  const auto apart = simulate_flows(c, {{0, 4, S}, {1, -1, S}});
  EXPECT_NEAR(apart[0], alone, 1e-12);
  EXPECT_NEAR(apart[1], kLinkLatencyS + S / kLinkBytesPerS, 1e-12);
}

TEST(HostOffloadPlatform, AClusterWithoutAHostIsRefusedNamingTheGroup) {
  const Cluster c = find_cluster("mixed");
  const auto result = sim_test::run_in_child([&] {
    s4u::Engine engine("host_offload_sim_test");
    sim::build_platform(c, nullptr, true);
  });
  ASSERT_FALSE(result.ok);
  EXPECT_NE(result.error.find("node_groups[].host"), std::string::npos) << result.error;
}

// ---- a data-parallel step with the optimizer offloaded, against its hand computation ----

using sim_test::DpSetup;

// GPT-2 124M over `dp` replicas, one micro-batch of 4 each.
DpSetup dp_step(int dp, bool offload) {
  DpSetup s = sim_test::gpt2_setup(dp, /*overlap=*/true, /*sequences_per_replica=*/4);
  s.parallel.offload_optimizer = offload;
  return s;
}

double iteration_s(const DpSetup& setup, const std::string& cluster_path) {
  sim::SimulationOptions options;
  options.iterations = 1;
  return sim_test::simulate_json(setup, cluster_path, options)["iteration_time_exact"].get<double>();
}

// One rank's optimizer, by hand: on the device (its AdamW kernels' costs), or offloaded (the
// copies' bytes over the PCIe link, and `sharing` ranks' host steps over the host's bandwidth).
struct OptimizerHand {
  Seconds device_s = 0;
  Seconds copies_s = 0;
  Bytes host_step_bytes = 0;
};

OptimizerHand optimizer_by_hand(const DpSetup& setup, const Cluster& cluster) {
  OptimizerHand hand;
  for (const auto& op : sim_test::recorded_step(setup, cluster)) {
    if (op.is_comm || op.phase != Phase::optimizer) continue;
    const ComputeOp c = sim_test::compute_op_of(op);
    if (!runs_on_host(c)) hand.device_s += sim::compute_cost(c, cluster.device_of(0)).seconds;
    else if (c.kind == OpKind::memcpy) hand.copies_s += kLinkLatencyS + c.bytes / kLinkBytesPerS;
    else hand.host_step_bytes += c.bytes;
  }
  return hand;
}

TEST(HostOffloadSim, TheStepMovesTheOptimizerToTheNodesHostAsComputedByHand) {
  const std::string path = cluster_file(1, 4);
  const Cluster cluster = load_cluster(path);
  sim::SimulationOptions once;
  once.iterations = 1;
  const nlohmann::json on_device = sim_test::simulate_json(dp_step(4, false), path, once);
  const nlohmann::json offloaded = sim_test::simulate_json(dp_step(4, true), path, once);
  const OptimizerHand device = optimizer_by_hand(dp_step(4, false), cluster);
  const OptimizerHand host = optimizer_by_hand(dp_step(4, true), cluster);
  ASSERT_GT(host.copies_s, 0);
  ASSERT_GT(host.host_step_bytes, 0);
  EXPECT_EQ(host.device_s, 0);  // nothing of the optimizer left on the device
  // The four ranks of the node step on its host at once: a quarter of its bandwidth each.
  const Seconds expected = on_device["iteration_time_exact"].get<double>() - device.device_s + host.copies_s +
                           4 * host.host_step_bytes / kHostBytesPerS;
  EXPECT_NEAR(offloaded["iteration_time_exact"].get<double>(), expected, expected * 1e-9);

  // Memory: the device keeps no optimizer state; the node's host holds the four ranks' masters,
  // moments and staging buffers (12 bytes per parameter + bf16 gradient and parameter copies).
  const auto& dev = on_device["memory"][0];
  const auto& off = offloaded["memory"][0];
  EXPECT_GT(dev["at_peak_bytes"]["optimizer_state"].get<double>(), 0);
  EXPECT_EQ(off["at_peak_bytes"]["optimizer_state"].get<double>(), 0);
  const double parameters = static_cast<double>(dp_step(4, true).model->describe().parameter_count);
  EXPECT_NEAR(off["host_per_node_bytes"].get<double>(), 4 * parameters * (12 + 2 + 2), 4 * parameters * 1e-6);
  EXPECT_EQ(off["host_capacity_bytes"].get<double>(), 1000e9);
  EXPECT_FALSE(off["host_out_of_memory"].get<bool>());
}

TEST(HostOffloadSim, TheNodesRanksShareItsHostsMemoryBandwidth) {
  // Halving the host's bandwidth lengthens the step by the host steps' time at full bandwidth:
  // with two ranks on the node, twice what it is with one rank per node.
  auto lengthening = [](int nodes, int per_node) {
    return iteration_s(dp_step(2, true), cluster_file(nodes, per_node, kHostBytesPerS / 2)) -
           iteration_s(dp_step(2, true), cluster_file(nodes, per_node));
  };
  const double shared = lengthening(1, 2), alone = lengthening(2, 1);
  ASSERT_GT(alone, 0);
  EXPECT_NEAR(shared / alone, 2.0, 1e-6);
}

}  // namespace
}  // namespace tandem
