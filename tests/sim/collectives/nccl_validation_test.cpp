// The NCCL validation cases (validation/nccl/*.yaml): each published nccl-tests bus bandwidth is
// predicted by the simulated nccl-tests (the collective as flows on the cluster's modeled links,
// NCCL model on) and must fall within the case's band. Also: flows reproduce the pure model.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "sim/collectives/collective_benchmark.hpp"
#include "sim/collectives/nccl_cases.hpp"
#include "sim/collectives/nccl_fabric.hpp"
#include "sim/platform_builder.hpp"
#include "tests/sim/sim_test_support.hpp"
#include "validation/nccl_validation_run.hpp"

namespace tandem::sim {
namespace {

TEST(NcclValidation, EveryCaseWithinItsBandOfThePublishedBusBandwidth) {
  const auto files = nccl_case_files();
  ASSERT_GE(files.size(), 6u);
  std::vector<NcclCase> cases;
  for (const std::string& file : files) cases.push_back(load_nccl_case(file));
  const auto results = validation::run_nccl_cases(cases, 2);
  std::printf("%s", validation::format_nccl_table(results).c_str());
  for (const validation::NcclCaseResult& r : results) {
    ASSERT_TRUE(r.ok) << r.name << ": " << r.failure;
    EXPECT_TRUE(r.within_band()) << r.name << " " << 100 * r.error() << "% (" << r.source << ")";
  }
}

TEST(NcclValidation, FlowsOnTheModeledLinksReproduceTheModelsBusBandwidth) {
  // The ring on 8 H100 as flows (450 GB/s links, efficiency from the model) vs the pure model.
  const Cluster dgx = find_cluster("dgx-h100");
  const auto result = sim_test::run_in_child([&] {
    const CollectiveBenchmark b = benchmark_collective(dgx, OpKind::all_reduce, 8e9, 8, CollectiveAlgorithm::ring);
    std::ostringstream out;
    out.precision(17);
    out << b.seconds;
    return out.str();
  });
  ASSERT_TRUE(result.ok) << result.describe();
  const double simulated_s = std::stod(result.output);
  const nccl::Estimate model = nccl::achievable(OpKind::all_reduce, 8e9, *nccl_fabric(dgx.groups[0]), {8, 1},
                                                nccl::Algorithm::ring, nccl::Protocol::simple);
  EXPECT_NEAR(simulated_s / model.seconds, 1.0, 0.01);
}

// Simulated seconds of one collective among the first `ranks` devices, in a child process.
double simulated_seconds(const Cluster& cluster, OpKind kind, Bytes bytes, int ranks) {
  const auto result = sim_test::run_in_child([&] {
    std::ostringstream out;
    out.precision(17);
    out << benchmark_collective(cluster, kind, bytes, ranks).seconds;
    return out.str();
  });
  if (!result.ok) throw std::runtime_error(result.describe());
  return std::stod(result.output);
}

TEST(NcclValidation, SmallAndMidSizedCollectivesAsFlowsTakeNcclsTimeWhenAlone) {
  // 4 KB on 8 H100 (ring/LL, latency-bound) and 1 MB over 8 DGX A100 (NCCL's tree): the flows,
  // alone on the links, take what the NCCL model says.
  const Cluster h100 = find_cluster("dgx-h100");
  const Cluster a100 = find_cluster("dgx-a100");
  const nccl::Estimate small = nccl::predict(OpKind::all_reduce, 4096, *nccl_fabric(h100.groups[0]), {8, 1});
  EXPECT_NEAR(simulated_seconds(h100, OpKind::all_reduce, 4096, 8) / small.seconds, 1.0, 0.02);
  const nccl::Estimate tree = nccl::predict(OpKind::all_reduce, 1e6, *nccl_fabric(a100.groups[0]), {64, 8});
  EXPECT_EQ(tree.algorithm, nccl::Algorithm::tree);
  EXPECT_NEAR(simulated_seconds(a100, OpKind::all_reduce, 1e6, 64) / tree.seconds, 1.0, 0.02);
}

TEST(NcclValidation, ClustersWithoutAnNvlinkGenerationKeepTheLinksAsAchievable) {
  Cluster dgx = find_cluster("dgx-h100");
  dgx.groups[0].nvlink_generation = 0;
  EXPECT_FALSE(nccl_fabric(dgx.groups[0]).has_value());
  const auto result = sim_test::run_in_child([&] {
    const CollectiveBenchmark b = benchmark_collective(dgx, OpKind::all_reduce, 8e9, 8, CollectiveAlgorithm::ring);
    return std::to_string(b.bus_bytes_per_s / 1e9);
  });
  ASSERT_TRUE(result.ok) << result.describe();
  EXPECT_GT(std::stod(result.output), 440.0);  // the 450 GB/s links, as before the NCCL model
}

TEST(NcclValidation, PipelineSendRecvFlowsCarryNcclsAchievableRate) {
  // DGX A100: across nodes an HDR NIC (25 GB/s) at NCCL's 24 GB/s; in a node NVLink 3 (300 GB/s)
  // at 12 x 20 GB/s.
  // The platform's own topology view (what `simulate` runs with) carries the NCCL fabric.
  const Cluster dgx = find_cluster("dgx-a100");
  const TopologyView view = topology_view(dgx);
  EXPECT_NEAR(point_to_point_wire_bytes(view, 0, 8, 1e9), 1e9 * 25.0 / 24.0, 1e3);
  EXPECT_NEAR(point_to_point_wire_bytes(view, 0, 1, 1e9), 1e9 * 300.0 / 240.0, 1e3);
  // A cluster that does not state its NVLink generation has no NCCL fabric: the payload as is.
  Cluster unstated = dgx;
  unstated.groups[0].nvlink_generation = 0;
  EXPECT_EQ(point_to_point_wire_bytes(topology_view(unstated), 0, 8, 1e9), 1e9);
}

TEST(NcclValidation, AGroupOverDifferentFabricsHasNoNcclModel) {
  // mixed: ranks 0-63 on DGX H100 nodes, 64-127 on DGX A100 nodes.
  const Cluster mixed = find_cluster("mixed");
  const TopologyView view = topology_view(mixed);
  EXPECT_TRUE(nccl_estimate(OpKind::all_reduce, 1e9, {0, 8}, view).has_value());
  EXPECT_FALSE(nccl_estimate(OpKind::all_reduce, 1e9, {0, 64}, view).has_value());
}

TEST(NcclValidation, AnalyticEstimateWithoutFlowsForAGroupInOneNode) {
  const Cluster dgx = find_cluster("dgx-h100");
  const std::vector<int> node{0, 1, 2, 3, 4, 5, 6, 7};
  Cluster unstated = dgx;
  unstated.groups[0].nvlink_generation = 0;
  EXPECT_FALSE(nccl_estimate(OpKind::all_reduce, 8e9, node, topology_view(unstated)).has_value());  // no NCCL fabric
  const TopologyView view = topology_view(dgx);
  const auto automatic = nccl_estimate(OpKind::all_reduce, 8e9, node, view);
  ASSERT_TRUE(automatic.has_value());
  EXPECT_EQ(automatic->algorithm, nccl::Algorithm::nvls);
  const auto ring = nccl_estimate(OpKind::all_reduce, 8.0 * (1ull << 30), node, view, CollectiveAlgorithm::ring);
  ASSERT_TRUE(ring.has_value());
  EXPECT_EQ(ring->algorithm, nccl::Algorithm::ring);
  EXPECT_NEAR(ring->bus_bytes_per_s, 18 * 20.6e9, 1e6);
}

}  // namespace
}  // namespace tandem::sim
