// Replica folding: which strategies and clusters fold (and which must not), and that a folded
// simulation predicts what the unfolded one does — the same iteration time, per-rank breakdown,
// memory and energy — on cases small enough to run both ways.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>

#include "scenarios/scenario.hpp"
#include "sim/replica_folding.hpp"
#include "sim/simulation.hpp"
#include "strategies/data_parallel.hpp"
#include "strategies/hybrid_parallel.hpp"
#include "strategies/models/presets.hpp"
#include "strategies/models/transformer.hpp"
#include "tests/sim/folding_test_support.hpp"

namespace tandem {
namespace {

TrainingConfig training(std::int64_t global_batch) {
  TrainingConfig t;
  t.global_batch_size = global_batch;
  t.micro_batch_size = 1;
  t.seq_length = 1024;
  return t;
}

std::shared_ptr<const Model> gpt2() {
  auto cfg = transformer_preset("gpt2-124m");
  cfg.seq_length = 1024;
  return std::make_shared<TransformerModel>(cfg);
}

using sim_test::devices_of;

std::unique_ptr<Strategy> data_parallel(int dp, std::int64_t global_batch) {
  ParallelConfig p;
  p.data_parallel_size = dp;
  return std::make_unique<DataParallel>(gpt2(), training(global_batch), p, std::vector<double>(dp, 1.0));
}

std::unique_ptr<Strategy> hybrid(const Cluster& cluster, int tp, int pp, int dp, int zero) {
  ParallelConfig p;
  p.tensor_model_parallel_size = tp;
  p.pipeline_model_parallel_size = pp;
  p.data_parallel_size = dp;
  p.zero_stage = zero;
  return std::make_unique<HybridParallel>(gpt2(), training(8 * dp), p, HybridConfig{},
                                          devices_of(cluster, tp * pp * dp));
}

// GPT-2 124M whose MLPs are 16 experts (top-2, capacity 1.25), pipeline `pp` x data `dp`, experts
// split over blocks of `ep` replicas.
std::unique_ptr<Strategy> moe_hybrid(const Cluster& cluster, int pp, int dp, int ep) {
  auto cfg = transformer_preset("gpt2-124m");
  cfg.seq_length = 1024;
  cfg.num_moe_experts = 16;
  cfg.bias = false;  // experts and router have none
  cfg.moe_router_topk = 2;
  cfg.moe_expert_capacity_factor = 1.25;
  ParallelConfig p;
  p.pipeline_model_parallel_size = pp;
  p.data_parallel_size = dp;
  p.expert_model_parallel_size = ep;
  return std::make_unique<HybridParallel>(std::make_shared<TransformerModel>(cfg), training(4 * dp), p,
                                          HybridConfig{}, devices_of(cluster, pp * dp));
}

// ---- the plan ----

TEST(ReplicaFoldingPlan, ExpertParallelBlocksStayWholeInTheSimulatedReplicas) {
  // 32 replicas of 2 stages on DGX A100 nodes: blocks of 8 replicas own whole nodes; experts over
  // 16 replicas make the simulated block 16 (no all-to-all has a mirrored member).
  const Cluster cluster = find_cluster("dgx-a100");
  const auto by8 = moe_hybrid(cluster, 2, 32, 8);
  const sim::FoldPlan plan8 = sim::plan_replica_folding(*by8, cluster, sim::ReplicaFolding::automatic, false);
  ASSERT_TRUE(plan8.active) << plan8.note;
  EXPECT_EQ(plan8.simulated_replicas, 8);
  const auto by16 = moe_hybrid(cluster, 2, 32, 16);
  const sim::FoldPlan plan16 = sim::plan_replica_folding(*by16, cluster, sim::ReplicaFolding::automatic, false);
  ASSERT_TRUE(plan16.active) << plan16.note;
  EXPECT_EQ(plan16.simulated_replicas, 16);
  // Every rank mirrors one in the first 16 replicas (ranks are replica + 32 x stage), at its stage.
  for (int r = 0; r < by16->world_size(); ++r) {
    EXPECT_LT(plan16.mirror_of[r] % 32, 16) << "rank " << r;
    EXPECT_EQ(plan16.mirror_of[r] / 32, r / 32) << "rank " << r;
  }
}

TEST(ReplicaFoldingPlan, RefusedWhenExpertsSpanEveryReplica) {
  const Cluster cluster = find_cluster("dgx-a100");
  const auto strategy = moe_hybrid(cluster, 2, 16, 16);
  const sim::FoldPlan plan = sim::plan_replica_folding(*strategy, cluster, sim::ReplicaFolding::automatic, false);
  EXPECT_FALSE(plan.active);
  EXPECT_NE(plan.note.find("expert parallelism over 16 of 16 replicas"), std::string::npos) << plan.note;
}

TEST(ReplicaFoldingPlan, DataParallelFoldsOntoTheFirstNode) {
  const Cluster cluster = find_cluster("dgx-a100");  // 8 GPUs per node
  const auto strategy = data_parallel(64, 128);
  const sim::FoldPlan plan = sim::plan_replica_folding(*strategy, cluster, sim::ReplicaFolding::automatic, false);
  ASSERT_TRUE(plan.active) << plan.note;
  EXPECT_EQ(plan.simulated_replicas, 8);
  EXPECT_EQ(plan.simulated_ranks(), 8);
  EXPECT_EQ(plan.mirror_of[8], 0);
  EXPECT_EQ(plan.mirror_of[63], 7);
  EXPECT_TRUE(plan.simulated(7));
  EXPECT_FALSE(plan.simulated(8));
}

TEST(ReplicaFoldingPlan, HybridFoldsToOneReplicaAcrossDeviceKinds) {
  const Scenario s = load_scenario("mixed-3d-proportional");  // tp 8 x pp 3 x dp 8 on H100/A100/V100
  const auto strategy = make_strategy(s);
  const sim::FoldPlan plan = sim::plan_replica_folding(*strategy, s.cluster, sim::ReplicaFolding::automatic, false);
  ASSERT_TRUE(plan.active) << plan.note;
  EXPECT_EQ(plan.simulated_replicas, 1);
  EXPECT_EQ(plan.simulated_ranks(), 24);
  // Every ghost mirrors a rank of the same device kind.
  for (int r = 0; r < strategy->world_size(); ++r)
    EXPECT_EQ(s.cluster.device_of(r).name, s.cluster.device_of(plan.mirror_of[r]).name) << "rank " << r;
}

TEST(ReplicaFoldingPlan, RefusedWhenReplicasRunDifferentWork) {
  // Batch shares by device speed: replicas of different kinds run different numbers of
  // micro-batches, and a replica at the border between kinds has other neighbours in the gradient
  // all-reduce than one inside a kind, so none mirrors another (folding in kinds was 3% off).
  const Scenario proportional = load_scenario("mixed-dp-proportional");
  const auto strategy = make_strategy(proportional);
  const auto structure = strategy->replica_structure();
  ASSERT_TRUE(structure.has_value());
  EXPECT_NE(structure->work_of.front(), structure->work_of.back());
  EXPECT_FALSE(
      sim::plan_replica_folding(*strategy, proportional.cluster, sim::ReplicaFolding::automatic, false).active);
}

TEST(ReplicaFoldingPlan, RefusedWhenAskedOrWhenEveryRankIsTraced) {
  const Cluster cluster = find_cluster("dgx-a100");
  const auto even = data_parallel(64, 128);
  EXPECT_FALSE(sim::plan_replica_folding(*even, cluster, sim::ReplicaFolding::off, false).active);
  // A trace records every rank's ops: every rank is simulated.
  EXPECT_FALSE(sim::plan_replica_folding(*even, cluster, sim::ReplicaFolding::automatic, true).active);
}

TEST(ReplicaFoldingPlan, RefusedOnAnOversubscribedFabric) {
  Cluster cluster = find_cluster("dgx-a100");
  cluster.network.nodes_per_leaf = 2;  // 8 nodes of the job over 4 leaves
  cluster.network.oversubscription = 2;
  const auto strategy = data_parallel(64, 128);
  const sim::FoldPlan plan = sim::plan_replica_folding(*strategy, cluster, sim::ReplicaFolding::automatic, false);
  EXPECT_FALSE(plan.active);
  EXPECT_NE(plan.note.find("oversubscribed"), std::string::npos) << plan.note;
}

TEST(ReplicaFoldingPlan, RefusedWhenNoBlockHasATwin) {
  // 16 replicas of one rank: a node of H100s and a node of A100s. Blocks must own whole nodes,
  // and the two nodes' blocks are not twins.
  const Cluster cluster = find_cluster("mixed");
  ParallelConfig p;
  p.data_parallel_size = 16;
  Cluster two_nodes = cluster;
  two_nodes.groups[0].node_count = 1;
  two_nodes.groups[1].node_count = 1;
  two_nodes.groups.resize(2);
  const auto strategy = std::make_unique<DataParallel>(gpt2(), training(32), p, std::vector<double>(16, 1.0));
  const sim::FoldPlan plan = sim::plan_replica_folding(*strategy, two_nodes, sim::ReplicaFolding::automatic, false);
  EXPECT_FALSE(plan.active) << plan.note;
}

// ---- folded against unfolded ----

using sim_test::Outcome;
using sim_test::expect_same_prediction;

// Both runs time collectives in their aggregated form: a folded run must (a collective with ghosts
// in its group has no actors to pace exact steps, sim_device.cpp), so the unfolded reference does
// too, and the comparison measures what folding itself changes. How the aggregated form tracks the
// exact one is the collectives' own tests' business (tests/sim/collectives/): under the NCCL model a
// 80 MB ring over 4 DGX A100 nodes was 1.3% slower aggregated than exact, which is no folding error.
template <class Make>
Outcome simulate_child(const std::string& cluster_name, sim::ReplicaFolding folding, Make make) {
  sim::SimulationOptions options;
  options.replica_folding = folding;
  options.collective_fidelity = sim::CollectiveFidelity::aggregated;
  return sim_test::simulate_outcome(cluster_name, options, make);
}

TEST(ReplicaFoldingSim, DataParallelFoldedPredictsTheUnfoldedIteration) {
  auto make = [](const Cluster&) { return data_parallel(32, 64); };
  const Outcome full = simulate_child("dgx-a100", sim::ReplicaFolding::off, make);
  const Outcome folded = simulate_child("dgx-a100", sim::ReplicaFolding::automatic, make);
  expect_same_prediction(folded, full, 32);
  EXPECT_EQ(folded.simulated_ranks, 8);
}

TEST(ReplicaFoldingSim, HybridWithZeroFoldedPredictsTheUnfoldedIteration) {
  // tp 2 x pp 2 x dp 8, ZeRO-1: data-parallel groups span 4 nodes, pipeline groups 2.
  auto make = [](const Cluster& c) { return hybrid(c, 2, 2, 8, 1); };
  const Outcome full = simulate_child("dgx-a100", sim::ReplicaFolding::off, make);
  const Outcome folded = simulate_child("dgx-a100", sim::ReplicaFolding::automatic, make);
  expect_same_prediction(folded, full, 32);
}

TEST(ReplicaFoldingSim, ExpertParallelFoldedPredictsTheUnfoldedIteration) {
  // pp 2 x dp 16, experts over blocks of 4 replicas (all-to-all over NVLink), their gradients
  // summed over 4 replicas across nodes: 8 of 16 replicas simulated.
  auto make = [](const Cluster& c) { return moe_hybrid(c, 2, 16, 4); };
  const Outcome full = simulate_child("dgx-a100", sim::ReplicaFolding::off, make);
  const Outcome folded = simulate_child("dgx-a100", sim::ReplicaFolding::automatic, make);
  expect_same_prediction(folded, full, 32);
  EXPECT_EQ(folded.simulated_ranks, 16);
}

TEST(ReplicaFoldingSim, HeterogeneousPipelineFoldedPredictsTheUnfoldedIteration) {
  // One pipeline stage per device kind, 16 replicas, two per node.
  auto make = [](const Cluster& c) {
    ParallelConfig p;
    p.tensor_model_parallel_size = 4;
    p.pipeline_model_parallel_size = 3;
    p.data_parallel_size = 16;
    HybridConfig h;
    h.partition = HybridConfig::Partition::proportional;
    return std::make_unique<HybridParallel>(gpt2(), training(128), p, h, devices_of(c, 192));
  };
  const Outcome full = simulate_child("mixed", sim::ReplicaFolding::off, make);
  const Outcome folded = simulate_child("mixed", sim::ReplicaFolding::automatic, make);
  expect_same_prediction(folded, full, 192);
  EXPECT_EQ(folded.simulated_ranks, 24);
}

}  // namespace
}  // namespace tandem
