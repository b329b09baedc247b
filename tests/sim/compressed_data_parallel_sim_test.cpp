// Gradient compression in the simulator: on a bandwidth-starved cluster (8 nodes of one H100,
// 100 Gb/s Ethernet NICs, the premise) data-parallel GPT-2 124M spends less time in
// data-parallel communication with a codec, in proportion to the bytes its collectives put on
// each rank's wire (ring all-reduce 2(N−1)/N of the buffer; all-to-all and all-gather (N−1)/N),
// the codecs' encode/decode kernels are priced on the compute stream, and the iteration is
// shorter. Deterministic like every simulation.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "platforms/cluster.hpp"
#include "sim/simulation.hpp"
#include "strategies/data_parallel.hpp"
#include "strategies/models/presets.hpp"
#include "strategies/models/transformer.hpp"
#include "tests/sim/sim_test_support.hpp"

namespace tandem {
namespace {

constexpr int kRanks = 8;

std::string ethernet_cluster() {
  const auto path =
      std::filesystem::temp_directory_path() / ("tandem-ethernet-100g-" + std::to_string(::getpid()) + ".yaml");
  std::ofstream(path) << "name: ethernet-100g\n"
                         "network: { topology: star, switch_latency_us: 0.5 }\n"
                         "node_groups:\n"
                         "  - name: h100\n"
                         "    device: h100-sxm\n"
                         "    nodes: 8\n"
                         "    devices_per_node: 1\n"
                         "    intra_node: { fabric: nvswitch, bandwidth_gb_per_s: 450, latency_us: 1.0 }\n"
                         "    nic: { bandwidth_gbit_per_s: 100, latency_us: 2.0 }\n";
  return path.string();
}

struct Prediction {
  double iteration_s = 0;
  double dp_comm_s = 0;     // rank 0's data-parallel collectives, start to end, per iteration
  double wire_bytes = 0;    // what they put on rank 0's wire
  double codec_s = 0;       // rank 0's encode / decode kernels
  int collectives = 0;      // rank 0's data-parallel collectives per iteration
  double latency_s = 0;     // the path latency between two ranks
};

Prediction simulate(const CompressionConfig& compression) {
  auto child = sim_test::run_in_child([&] {
    sim_test::quiet_simgrid();
    const Cluster cluster = load_cluster(ethernet_cluster());
    TrainingConfig training;
    training.global_batch_size = 4 * kRanks;
    training.micro_batch_size = 4;
    training.seq_length = 1024;
    ParallelConfig parallel;
    parallel.data_parallel_size = kRanks;
    parallel.gradient_compression = compression;
    DataParallel dp(std::make_shared<TransformerModel>(transformer_preset("gpt2-124m")), training, parallel, {});
    sim::SimulationOptions options;
    options.warmup_iterations = 1;  // the codecs' state (and PowerSGD's Q draw) is set up in the first
    options.iterations = 1;
    options.record_trace = true;
    options.algorithm = sim::CollectiveAlgorithm::ring;
    const sim::SimulationResult r = sim::simulate(dp, cluster, options);
    nlohmann::json j;
    j["iteration_s"] = r.iteration_time_s;
    double comm = 0, wire = 0, codec = 0;
    int collectives = 0;
    const int last = r.trace.records.empty() ? 0 : r.trace.records.back().iteration;
    for (const TraceRecord& t : r.trace.records) {
      if (t.rank != 0 || t.iteration != last) continue;
      if (t.stream == Stream::dp_comm) {
        comm += t.end_s - t.start_s;
        ++collectives;
        const double n = kRanks, share = t.kind == OpKind::all_reduce ? 2.0 * (n - 1) / n : (n - 1) / n;
        wire += share * t.bytes;
      } else if (t.op_id.find("bucket") != std::string::npos && t.kind == OpKind::elementwise) {
        codec += t.end_s - t.start_s;
      }
    }
    j["dp_comm_s"] = comm;
    j["wire_bytes"] = wire;
    j["codec_s"] = codec;
    j["collectives"] = collectives;
    j["latency_s"] = cluster.path_latency_s(0, 1);
    return j.dump();
  });
  if (!child.ok) throw std::runtime_error(child.describe());
  const auto j = nlohmann::json::parse(child.output);
  return {j["iteration_s"], j["dp_comm_s"], j["wire_bytes"], j["codec_s"], j["collectives"], j["latency_s"]};
}

CompressionConfig codec(Compression type, int rank = 1) {
  CompressionConfig c;
  c.type = type;
  c.matrix_approximation_rank = rank;
  return c;
}

TEST(CompressedDataParallelSim, CommunicationTimeFollowsTheWireBytesOnSlowEthernet) {
  const Prediction plain = simulate({});
  std::cout << "plain: iteration " << plain.iteration_s << " s, dp comm " << plain.dp_comm_s << " s, wire "
            << plain.wire_bytes / 1e6 << " MB in " << plain.collectives << " collectives\n";
  ASSERT_GT(plain.dp_comm_s, 0);
  for (const CompressionConfig& c : {codec(Compression::int8), codec(Compression::one_bit),
                                     codec(Compression::power_sgd, 4)}) {
    const Prediction p = simulate(c);
    const double bytes_ratio = p.wire_bytes / plain.wire_bytes, time_ratio = p.dp_comm_s / plain.dp_comm_s;
    std::cout << describe(c) << ": iteration " << p.iteration_s << " s, dp comm " << p.dp_comm_s << " s (x"
              << time_ratio << "), wire " << p.wire_bytes / 1e6 << " MB (x" << bytes_ratio << ") in "
              << p.collectives << " collectives, codec kernels " << p.codec_s << " s\n";
    EXPECT_LT(bytes_ratio, 0.6) << describe(c);
    // The plain exchange is bandwidth-bound: time = wire bytes at the plain rate, plus at most
    // one path latency per ring step of each collective (2(N-1) for an all-reduce, fewer for
    // the others), which is all that is left of PowerSGD's few megabytes.
    const double at_plain_rate = bytes_ratio * plain.dp_comm_s;
    const double latency_bound = p.collectives * 2.0 * (kRanks - 1) * p.latency_s;
    EXPECT_GE(p.dp_comm_s, 0.95 * at_plain_rate) << describe(c);
    EXPECT_LE(p.dp_comm_s, 1.05 * at_plain_rate + latency_bound) << describe(c);
    if (c.type != Compression::power_sgd)  // these are bandwidth-bound too: time in proportion to bytes
      EXPECT_NEAR(time_ratio, bytes_ratio, 0.15 * bytes_ratio) << describe(c);
    EXPECT_GT(p.codec_s, 0) << describe(c) << ": encode/decode kernels are priced";
    EXPECT_LT(p.iteration_s, plain.iteration_s) << describe(c);
  }
}

TEST(CompressedDataParallelSim, TwoIdenticalRunsPredictTheSameBitForBit) {
  const Prediction a = simulate(codec(Compression::top_k)), b = simulate(codec(Compression::top_k));
  EXPECT_EQ(a.iteration_s, b.iteration_s);
  EXPECT_EQ(a.dp_comm_s, b.dp_comm_s);
}

}  // namespace
}  // namespace tandem
