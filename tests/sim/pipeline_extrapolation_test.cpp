// Pipeline extrapolation: which strategies may have their iteration extrapolated from two
// shorter ones (and which must not), that a result survives its trip through bytes, and that the
// extrapolated prediction is the one of the full iteration — iteration time within 1%, each
// rank's compute / exposed communication / idle time within 2% of the iteration, memory exactly —
// on small members of each family: 1F1B with tensor + sequence parallelism, interleaved stages,
// ZeRO-1 with data parallelism, a pipeline over three device kinds, an oversubscribed fabric.
#include <gtest/gtest.h>

#include "scenarios/scenario.hpp"
#include "sim/pipeline_extrapolation.hpp"
#include "tests/sim/folding_test_support.hpp"
#include "tests/sim/hybrid_test_shapes.hpp"

namespace tandem {
namespace {

using sim_test::hybrid;
using Shape = sim_test::HybridShape;

sim::ExtrapolationPlan plan_for(const Cluster& cluster, const Shape& shape, sim::SimulationOptions options = {}) {
  return sim::plan_pipeline_extrapolation(*hybrid(cluster, shape), cluster, options);
}

// ---- the plan ----

TEST(PipelineExtrapolationPlan, OneFOneBRunsPAndPPlusOneMicroBatches) {
  const sim::ExtrapolationPlan plan = plan_for(find_cluster("dgx-a100"), Shape{.pp = 4, .micro_batches = 16});
  EXPECT_TRUE(plan.apply) << plan.note;
  EXPECT_EQ(plan.shorter, 4);
  EXPECT_EQ(plan.longer, 5);
  EXPECT_EQ(plan.target, 16);
  EXPECT_NE(plan.note.find("16 micro-batches from iterations of 4 and 5"), std::string::npos) << plan.note;
}

TEST(PipelineExtrapolationPlan, InterleavedRunsTwoAndThreeTimesTheStages) {
  const sim::ExtrapolationPlan plan =
      plan_for(find_cluster("dgx-a100"), Shape{.pp = 2, .virtual_stages = 2, .micro_batches = 16, .layers = 8});
  EXPECT_TRUE(plan.apply) << plan.note;
  EXPECT_EQ(plan.shorter, 4);
  EXPECT_EQ(plan.longer, 6);
}

TEST(PipelineExtrapolationPlan, NothingToSayWithoutAPipeline) {
  const sim::ExtrapolationPlan plan = plan_for(find_cluster("dgx-a100"), Shape{.pp = 1, .micro_batches = 16});
  EXPECT_FALSE(plan.apply);
  EXPECT_TRUE(plan.note.empty()) << plan.note;
}

TEST(PipelineExtrapolationPlan, RefusedWhenOffTracedOrTooShort) {
  const Cluster cluster = find_cluster("dgx-a100");
  sim::SimulationOptions off;
  off.pipeline_extrapolation = sim::FoldingMode::off;
  EXPECT_FALSE(plan_for(cluster, Shape{.pp = 4, .micro_batches = 16}, off).apply);
  sim::SimulationOptions traced;
  traced.record_trace = true;
  const sim::ExtrapolationPlan with_trace = plan_for(cluster, Shape{.pp = 4, .micro_batches = 16}, traced);
  EXPECT_FALSE(with_trace.apply);
  EXPECT_NE(with_trace.note.find("trace"), std::string::npos) << with_trace.note;
  // 4 + 5 micro-batches would cost more than the 8 of the real iteration.
  const sim::ExtrapolationPlan short_one = plan_for(cluster, Shape{.pp = 4, .micro_batches = 8});
  EXPECT_FALSE(short_one.apply);
  EXPECT_NE(short_one.note.find("too few"), std::string::npos) << short_one.note;
}

// ---- a result through bytes (how it comes back from a child process) ----

TEST(PipelineExtrapolationBytes, AResultComesBackWhole) {
  sim::SimulationResult r;
  r.iteration_time_s = 1.25;
  r.iteration_times_s = {1.0, 1.5};
  r.ranks.resize(3);
  r.ranks[2].compute_s = 0.5;
  r.ranks[2].peak_memory_bytes = 7e9;
  r.ranks[1].out_of_memory = true;
  r.energy_per_iteration_j = 42;
  r.compute_ops = 11;
  r.comm_ops = 12;
  r.compute_executions = 13;
  r.simulated_ranks = 3;
  r.folding = "no replica folding: one replica";
  const sim::SimulationResult back = sim::result_from_bytes(sim::to_bytes(r));
  EXPECT_EQ(back.iteration_times_s, r.iteration_times_s);
  ASSERT_EQ(back.ranks.size(), 3u);
  EXPECT_EQ(back.ranks[2].compute_s, 0.5);
  EXPECT_EQ(back.ranks[2].peak_memory_bytes, 7e9);
  EXPECT_TRUE(back.ranks[1].out_of_memory);
  EXPECT_EQ(back.compute_ops + back.comm_ops + back.compute_executions, 36u);
  EXPECT_EQ(back.folding, r.folding);
  const std::string bytes = sim::to_bytes(r);
  EXPECT_THROW(sim::result_from_bytes(std::string_view(bytes).substr(0, bytes.size() - 3)), std::runtime_error);
}

TEST(PipelineExtrapolationLine, FiguresFollowTheLineAndMemoryMustAgree) {
  sim::ExtrapolationPlan plan;
  plan.shorter = 4;
  plan.longer = 5;
  plan.target = 16;
  sim::SimulationResult a, b;
  a.iteration_time_s = 10;
  b.iteration_time_s = 12;
  a.iteration_times_s = {10};
  b.iteration_times_s = {12};
  a.ranks.resize(1);
  b.ranks.resize(1);
  a.ranks[0].idle_s = 1;
  b.ranks[0].idle_s = 1.5;
  a.ranks[0].peak_memory_bytes = b.ranks[0].peak_memory_bytes = 5;
  const auto out = sim::extrapolate(a, b, plan);
  ASSERT_TRUE(out.has_value());
  EXPECT_DOUBLE_EQ(out->iteration_time_s, 12 + 11 * 2);
  EXPECT_DOUBLE_EQ(out->ranks[0].idle_s, 1.5 + 11 * 0.5);
  // A transient buffer alive at one run's peak only (within 1%): the runs agree, the larger stands.
  a.ranks[0].peak_memory_bytes = 1000;
  b.ranks[0].peak_memory_bytes = 995;
  const auto transient = sim::extrapolate(a, b, plan);
  ASSERT_TRUE(transient.has_value());
  EXPECT_DOUBLE_EQ(transient->ranks[0].peak_memory_bytes, 1000);
  a.ranks[0].peak_memory_bytes = 5;
  b.ranks[0].peak_memory_bytes = 6;  // the shorter run had not reached the steady state's memory
  EXPECT_FALSE(sim::extrapolate(a, b, plan).has_value());
}

// ---- extrapolated against the full iteration ----

void expect_extrapolation_agrees(const Cluster& cluster, const Shape& shape) {
  auto make = [&](const Cluster& c) { return hybrid(c, shape); };
  sim::SimulationOptions options;
  options.pipeline_extrapolation = sim::FoldingMode::off;
  const sim_test::Outcome full = sim_test::simulate_outcome(cluster, options, make);
  options.pipeline_extrapolation = sim::FoldingMode::automatic;
  const sim_test::Outcome extrapolated = sim_test::simulate_outcome(cluster, options, make);
  EXPECT_NE(extrapolated.folding.find("pipeline extrapolation: "), std::string::npos) << extrapolated.folding;
  EXPECT_LT(extrapolated.ops, full.ops);
  sim_test::expect_same_figures(extrapolated, full, shape.tp * shape.pp * shape.dp,
                                {.iteration = 1e-2, .per_rank = 2e-2, .energy = 2e-2, .memory = 1e-2});
}

TEST(PipelineExtrapolationSim, OneFOneBWithTensorAndSequenceParallelismPredictsTheFullIteration) {
  expect_extrapolation_agrees(find_cluster("dgx-a100"), Shape{.tp = 8, .pp = 4, .micro_batches = 16, .sp = true});
}

TEST(PipelineExtrapolationSim, InterleavedStagesPredictTheFullIteration) {
  expect_extrapolation_agrees(find_cluster("dgx-a100"),
                              Shape{.tp = 8, .pp = 2, .virtual_stages = 2, .micro_batches = 16, .layers = 8});
}

TEST(PipelineExtrapolationSim, ZeroOneWithDataParallelismPredictsTheFullIteration) {
  expect_extrapolation_agrees(find_cluster("dgx-a100"), Shape{.tp = 4, .pp = 2, .dp = 2, .zero = 1, .micro_batches = 8});
}

TEST(PipelineExtrapolationSim, PipelineOverThreeDeviceKindsPredictsTheFullIteration) {
  expect_extrapolation_agrees(find_cluster("mixed"),
                              Shape{.tp = 8, .pp = 3, .micro_batches = 12, .proportional = true, .layers = 6});
}

TEST(PipelineExtrapolationSim, OversubscribedFabricPredictsTheFullIteration) {
  Cluster cluster = find_cluster("dgx-a100");
  cluster.network.nodes_per_leaf = 1;
  cluster.network.oversubscription = 2;
  expect_extrapolation_agrees(cluster, Shape{.tp = 8, .pp = 2, .dp = 2, .micro_batches = 8});
}

}  // namespace
}  // namespace tandem
