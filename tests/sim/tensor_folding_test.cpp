// Tensor folding: which strategies and clusters fold their tensor-parallel groups (and which must
// not), and that a folded simulation predicts what the unfolded one does — iteration time within
// 1%, each rank's compute / exposed communication / idle time within 2% of the iteration, memory
// exactly — on small members of each family: tensor + sequence parallel under 1F1B, interleaved
// stages, ZeRO-3 with data parallelism, a pipeline over three device kinds.
#include <gtest/gtest.h>

#include "scenarios/scenario.hpp"
#include "sim/replica_folding.hpp"
#include "sim/tensor_folding.hpp"
#include "strategies/hybrid_parallel.hpp"
#include "strategies/models/presets.hpp"
#include "strategies/models/transformer.hpp"
#include "tests/sim/folding_test_support.hpp"
#include "tests/sim/hybrid_test_shapes.hpp"

namespace tandem {
namespace {


using sim_test::hybrid;
using Shape = sim_test::HybridShape;

sim::FoldPlan plan_for(const Cluster& cluster, const Shape& shape, sim::FoldingMode mode = sim::FoldingMode::automatic,
                       bool traced = false) {
  const auto strategy = hybrid(cluster, shape);
  sim::FoldPlan plan = sim::plan_replica_folding(*strategy, cluster, sim::ReplicaFolding::off, traced);
  sim::plan_tensor_folding(*strategy, cluster, mode, traced, plan);
  return plan;
}

// ---- the plan ----

TEST(TensorFoldingPlan, EachGroupFoldsOntoItsFirstMember) {
  const Cluster cluster = find_cluster("dgx-a100");
  const sim::FoldPlan plan = plan_for(cluster, Shape{.tp = 8, .pp = 2});
  ASSERT_TRUE(plan.active) << plan.tensor_note;
  EXPECT_EQ(plan.simulated_ranks(), 2);
  EXPECT_EQ(plan.mirror_of[7], 0);
  EXPECT_EQ(plan.mirror_of[9], 8);
  EXPECT_EQ(plan.tensor_group_size, 8);
}

TEST(TensorFoldingPlan, ComposesWithReplicaFolding) {
  const Cluster cluster = find_cluster("dgx-a100");
  const auto strategy = hybrid(cluster, Shape{.tp = 8, .pp = 2, .dp = 4});
  sim::FoldPlan plan = sim::plan_replica_folding(*strategy, cluster, sim::ReplicaFolding::automatic, false);
  ASSERT_TRUE(plan.active) << plan.note;
  sim::plan_tensor_folding(*strategy, cluster, sim::FoldingMode::automatic, false, plan);
  EXPECT_EQ(plan.simulated_ranks(), 2) << plan.note << "; " << plan.tensor_note;
  // A rank of a ghost replica mirrors the leader of its tensor group's twin in the first replica.
  // (ranks are tp + 8 (dp + 4 pp): the leaders of replica 0 are 0 and 32)
  for (int r = 0; r < strategy->world_size(); ++r) EXPECT_TRUE(plan.mirror_of[r] == 0 || plan.mirror_of[r] == 32) << r;
}

TEST(TensorFoldingPlan, RefusedWhenTensorGroupsShareANode) {
  // tp 4 on 8-GPU nodes: two groups per node, whose traffic meets on the node's ports.
  const sim::FoldPlan plan = plan_for(find_cluster("dgx-a100"), Shape{.tp = 4, .pp = 2});
  EXPECT_FALSE(plan.active);
  EXPECT_NE(plan.tensor_note.find("more than one"), std::string::npos) << plan.tensor_note;
}

TEST(TensorFoldingPlan, RefusedOnAnOversubscribedFabric) {
  Cluster cluster = find_cluster("dgx-a100");
  cluster.network.nodes_per_leaf = 1;
  cluster.network.oversubscription = 2;
  const sim::FoldPlan plan = plan_for(cluster, Shape{.tp = 8, .pp = 2});
  EXPECT_FALSE(plan.active);
  EXPECT_NE(plan.tensor_note.find("oversubscribed"), std::string::npos) << plan.tensor_note;
}

TEST(TensorFoldingPlan, RefusedWhenAskedOrWhenEveryRankIsTraced) {
  const Cluster cluster = find_cluster("dgx-a100");
  EXPECT_FALSE(plan_for(cluster, Shape{.tp = 8, .pp = 2}, sim::FoldingMode::off).active);
  EXPECT_FALSE(plan_for(cluster, Shape{.tp = 8, .pp = 2}, sim::FoldingMode::automatic, true).active);
  EXPECT_FALSE(plan_for(cluster, Shape{.tp = 1, .pp = 2}).active);  // no tensor groups
}

// ---- folded against unfolded ----

// Both runs unfold replicas, so only tensor folding differs.
void expect_folding_agrees(const std::string& cluster_name, const Shape& shape) {
  auto make = [&](const Cluster& c) { return hybrid(c, shape); };
  sim::SimulationOptions options;
  options.replica_folding = sim::ReplicaFolding::off;
  options.tensor_folding = sim::FoldingMode::off;
  const sim_test::Outcome full = sim_test::simulate_outcome(cluster_name, options, make);
  options.tensor_folding = sim::FoldingMode::automatic;
  const sim_test::Outcome folded = sim_test::simulate_outcome(cluster_name, options, make);
  const int world = shape.tp * shape.pp * shape.dp;
  EXPECT_EQ(folded.simulated_ranks, world / shape.tp) << folded.folding;
  sim_test::expect_same_prediction(folded, full, world, {.iteration = 1e-2, .per_rank = 2e-2, .energy = 2e-2});
}

TEST(TensorFoldingSim, TensorAndSequenceParallelOneFOneBPredictsTheUnfoldedIteration) {
  expect_folding_agrees("dgx-a100", Shape{.tp = 8, .pp = 2, .micro_batches = 8, .sp = true});
}

TEST(TensorFoldingSim, InterleavedStagesPredictTheUnfoldedIteration) {
  expect_folding_agrees("dgx-a100", Shape{.tp = 8, .pp = 2, .virtual_stages = 2, .micro_batches = 4, .layers = 8});
}

TEST(TensorFoldingSim, ZeroThreeWithDataParallelismPredictsTheUnfoldedIteration) {
  expect_folding_agrees("dgx-a100", Shape{.tp = 8, .pp = 1, .dp = 2, .zero = 3, .micro_batches = 2});
}

TEST(TensorFoldingSim, PipelineOverThreeDeviceKindsPredictsTheUnfoldedIteration) {
  // One stage per device kind (H100, A100, V100 nodes), layers in proportion to speed.
  expect_folding_agrees("mixed", Shape{.tp = 8, .pp = 3, .micro_batches = 6, .proportional = true, .layers = 6});
}

// Every coarsening on (the defaults) against every exact form, on one hybrid with replicas.
TEST(TensorFoldingSim, DefaultCoarseningsPredictTheExactForm) {
  const Shape shape{.tp = 8, .pp = 2, .dp = 2, .zero = 1, .micro_batches = 4, .sp = true};
  auto make = [&](const Cluster& c) { return hybrid(c, shape); };
  sim::SimulationOptions exact;
  exact.replica_folding = sim::ReplicaFolding::off;
  exact.tensor_folding = sim::FoldingMode::off;
  exact.pipeline_extrapolation = sim::FoldingMode::off;
  exact.compute_fidelity = sim::ComputeFidelity::per_op;
  exact.collective_fidelity = sim::CollectiveFidelity::exact;
  const sim_test::Outcome full = sim_test::simulate_outcome("dgx-a100", exact, make);
  const sim_test::Outcome coarse = sim_test::simulate_outcome("dgx-a100", sim::SimulationOptions{}, make);
  EXPECT_EQ(coarse.simulated_ranks, 2) << coarse.folding;
  sim_test::expect_same_prediction(coarse, full, 32, {.iteration = 1e-2, .per_rank = 2e-2, .energy = 2e-2});
}

}  // namespace
}  // namespace tandem
