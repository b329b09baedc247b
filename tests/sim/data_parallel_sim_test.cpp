// Data parallelism in the simulator: the predicted iteration against its hand computation,
// overlap, determinism, memory, the proportional batch split on a heterogeneous cluster, and the
// equivalence of the fused and per-op compute fidelities.
#include <gtest/gtest.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "platforms/cluster.hpp"
#include "sim/cost_model.hpp"
#include "sim/prediction.hpp"
#include "sim/simulation.hpp"
#include "strategies/data_parallel.hpp"
#include "strategies/models/presets.hpp"
#include "strategies/models/transformer.hpp"
#include "tests/sim/data_parallel_setup.hpp"
#include "tests/sim/sim_test_support.hpp"
#include "tests/strategies/recording_runtime.hpp"

namespace tandem {
namespace {

// One node of four H100s behind an NVSwitch: every ring edge is one intra-node route, so a ring
// all-reduce takes exactly 2(n-1)(alpha + S/(n beta)).
std::string one_node_cluster() {
  const auto path = std::filesystem::temp_directory_path() / ("tandem-dp-one-node-" + std::to_string(::getpid()) + ".yaml");
  std::ofstream(path) << "name: one-node\n"
                         "network: { topology: star, switch_latency_us: 0.5 }\n"
                         "node_groups:\n"
                         "  - name: h100\n"
                         "    device: h100-sxm\n"
                         "    nodes: 1\n"
                         "    devices_per_node: 4\n"
                         "    intra_node: { fabric: nvswitch, bandwidth_gb_per_s: 450, latency_us: 1.0 }\n";
  return path.string();
}

using sim_test::DpSetup;
using sim_test::gpt2_setup;
using sim_test::make_dp;
using sim_test::simulate_json;

// The hand computation: the rank's compute ops costed one by one, plus each bucket's ring
// all-reduce 2(n-1)(alpha + S/(n beta)) when nothing overlaps.
struct Hand {
  Seconds compute_s = 0;
  Seconds allreduce_s = 0;
  int buckets = 0;
};

Hand hand_computation(const DpSetup& setup, const Cluster& cluster) {
  Hand hand;
  const int n = setup.parallel.data_parallel_size;
  const Seconds alpha = cluster.path_latency_s(0, 1);
  const BytesPerSecond beta = cluster.path_bandwidth_bytes_per_s(0, 1);
  for (const auto& op : sim_test::recorded_step(setup, cluster)) {
    if (!op.is_comm) {
      hand.compute_s += sim::compute_cost(sim_test::compute_op_of(op), cluster.device_of(0)).seconds;
    } else {
      EXPECT_EQ(op.kind, OpKind::all_reduce);
      hand.allreduce_s += 2.0 * (n - 1) * (alpha + op.bytes / (n * beta));
      hand.buckets++;
    }
  }
  return hand;
}

TEST(DataParallelSim, IterationWithoutOverlapMatchesHandComputation) {
  const std::string path = one_node_cluster();
  const Cluster cluster = load_cluster(path);
  const DpSetup setup = gpt2_setup(4, /*overlap=*/false);
  const Hand hand = hand_computation(setup, cluster);
  ASSERT_GT(hand.buckets, 1);

  sim::SimulationOptions options;
  options.algorithm = sim::CollectiveAlgorithm::ring;
  options.collective_fidelity = sim::CollectiveFidelity::exact;
  const nlohmann::json p = simulate_json(setup, path, options);
  const double predicted = p["iteration_time_s"];
  const double expected = hand.compute_s + hand.allreduce_s;
  std::cout << "predicted " << predicted << " s, hand " << expected << " s (compute " << hand.compute_s
            << ", all-reduce " << hand.allreduce_s << " over " << hand.buckets << " buckets)\n";
  EXPECT_NEAR(predicted, expected, 0.05 * expected);
  EXPECT_NEAR(predicted, expected, 0.001 * expected) << "the simulator should be exact here";
  EXPECT_NEAR(p["time_breakdown_mean"]["compute_s"].get<double>(), hand.compute_s, 1e-6 * hand.compute_s);
}

TEST(DataParallelSim, OverlapHidesGradientAllReduceBehindBackward) {
  const std::string path = one_node_cluster();
  const Cluster cluster = load_cluster(path);
  sim::SimulationOptions options;
  options.algorithm = sim::CollectiveAlgorithm::ring;
  // Buckets of 5M parameters (about DDP's 25 MB in bf16), so that most of them complete while
  // backward goes on; the last one (holding the 38M-parameter tied embedding, final only after
  // the embedding's backward) cannot overlap anything.
  DpSetup serial_setup = gpt2_setup(4, false), overlap_setup = gpt2_setup(4, true);
  serial_setup.parallel.ddp_bucket_size = overlap_setup.parallel.ddp_bucket_size = 5'000'000;
  const nlohmann::json serial = simulate_json(serial_setup, path, options);
  const nlohmann::json overlapped = simulate_json(overlap_setup, path, options);
  const Hand hand = hand_computation(overlap_setup, cluster);
  const double t_serial = serial["iteration_time_s"];
  const double t_overlap = overlapped["iteration_time_s"];
  std::cout << "serial " << t_serial << " s, overlapped " << t_overlap << " s, compute " << hand.compute_s << " s\n";
  EXPECT_LT(t_overlap, t_serial);
  EXPECT_GE(t_overlap, hand.compute_s);
  // Exposed communication shrinks to (about) what is left after backward ends.
  EXPECT_LT(overlapped["time_breakdown_mean"]["exposed_comm_s"].get<double>(),
            0.5 * serial["time_breakdown_mean"]["exposed_comm_s"].get<double>());
}

TEST(DataParallelSim, TwoIdenticalRunsGiveIdenticalResults) {
  const std::string path = bundled_dir("platforms/clusters") + "/tiny-h100.yaml";
  sim::SimulationOptions options;
  options.iterations = 2;
  nlohmann::json a = simulate_json(gpt2_setup(8, true), path, options);
  nlohmann::json b = simulate_json(gpt2_setup(8, true), path, options);
  // Only the simulator's own wall time may differ; every predicted number is bit for bit equal.
  a["simulation"].erase("wall_time_s");
  b["simulation"].erase("wall_time_s");
  EXPECT_EQ(a.dump(), b.dump());
}

TEST(DataParallelSim, PeakMemoryIsModelStatesPlusOneMicroBatchOfActivations) {
  const std::string path = one_node_cluster();
  const DpSetup setup = gpt2_setup(4, true);
  const nlohmann::json p = simulate_json(setup, path, {});
  const auto& cfg = std::static_pointer_cast<const TransformerModel>(setup.model)->config();
  const double psi = static_cast<double>(parameter_count(cfg));
  const double model_states = 16.0 * psi;  // 2 + 2 + 12 bytes per parameter (FACTS.md)
  const double peak = p["memory"][0]["peak_max_bytes"];
  const double states = p["memory"][0]["at_peak_bytes"]["parameters"].get<double>() +
                        p["memory"][0]["at_peak_bytes"]["gradients"].get<double>() +
                        p["memory"][0]["at_peak_bytes"]["optimizer_state"].get<double>();
  EXPECT_NEAR(states, model_states, 0.02 * model_states);
  const double activations = cfg.num_layers * activation_bytes_per_layer(cfg, 4, 1024, 1, false, Recompute::none);
  EXPECT_GT(peak, model_states + 0.9 * activations);
  EXPECT_FALSE(p["out_of_memory"].get<bool>());
}

TEST(DataParallelSim, OutOfMemoryVerdictWhenTheModelDoesNotFit) {
  DpSetup setup = gpt2_setup(4, true);
  setup.model = std::make_shared<TransformerModel>(transformer_preset("gpt3-13b"));  // 16 x 13e9 > 80 GB
  setup.training.seq_length = 2048;
  setup.training.micro_batch_size = 1;
  const nlohmann::json p = simulate_json(setup, one_node_cluster(), {});
  EXPECT_TRUE(p["out_of_memory"].get<bool>());
  EXPECT_GT(p["memory"][0]["peak_max_bytes"].get<double>(), p["memory"][0]["capacity_bytes"].get<double>());
}

TEST(DataParallelSim, FusedComputeEqualsPerOpCompute) {
  const std::string path = bundled_dir("platforms/clusters") + "/tiny-h100.yaml";
  sim::SimulationOptions fused, per_op;
  per_op.compute_fidelity = sim::ComputeFidelity::per_op;
  const nlohmann::json a = simulate_json(gpt2_setup(8, true), path, fused);
  const nlohmann::json b = simulate_json(gpt2_setup(8, true), path, per_op);
  EXPECT_NEAR(a["iteration_time_exact"].get<double>(), b["iteration_time_exact"].get<double>(),
              1e-9 * b["iteration_time_exact"].get<double>());
  EXPECT_LT(a["compute_executions"].get<double>(), 0.2 * b["compute_executions"].get<double>());
}

TEST(DataParallelSim, ProportionalSplitBeatsEvenSplitOnMixedDevices) {
  const std::string path = bundled_dir("platforms/clusters") + "/mixed.yaml";
  const Cluster cluster = load_cluster(path);
  // One replica per device over the whole mixed cluster (H100, A100, V100 nodes).
  DpSetup even = gpt2_setup(cluster.device_count(), true);
  even.training.global_batch_size = 4 * 8 * cluster.device_count();
  DpSetup proportional = even;
  proportional.parallel.batch_split = BatchSplit::proportional;
  const nlohmann::json a = simulate_json(even, path, {});
  const nlohmann::json b = simulate_json(proportional, path, {});
  const double t_even = a["iteration_time_s"], t_prop = b["iteration_time_s"];
  std::cout << "even split " << t_even << " s, proportional " << t_prop << " s ("
            << (t_even / t_prop) << "x)\n";
  EXPECT_LT(t_prop, 0.9 * t_even);
  // Why: the fast devices no longer wait for the slow ones.
  EXPECT_LT(b["time_breakdown_mean"]["idle_s"].get<double>(), a["time_breakdown_mean"]["idle_s"].get<double>());
}

TEST(DataParallelSim, ImpossibleBatchIsRefusedNamingTheKnob) {
  DpSetup setup = gpt2_setup(4, true);
  setup.training.global_batch_size = 30;  // not a multiple of 4 x 4
  const Cluster cluster = load_cluster(one_node_cluster());
  try {
    make_dp(setup, cluster);
    FAIL() << "expected a StrategyError";
  } catch (const StrategyError& e) {
    EXPECT_EQ(e.field(), "training.global_batch_size");
  }
}

}  // namespace
}  // namespace tandem
