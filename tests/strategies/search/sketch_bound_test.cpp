// The sketch of a large space (scenarios/search_evaluator.hpp): a pipelined candidate's compute
// bound comes from short, compute-only traces of its sketch twin (1F1B, even batch split, the
// same layers on every rank), extrapolated to the candidate's own micro-batches. These tests pin
// down that this shortcut loses nothing: a compute-only trace keeps every rank's compute sums, the
// sketch's bound is the candidate's own compute bound, and it never exceeds the full estimate.
#include <gtest/gtest.h>

#include <cmath>

#include "platforms/cluster_selection.hpp"
#include "scenarios/candidate_scenario.hpp"
#include "scenarios/search_evaluator.hpp"
#include "scenarios/search_spec.hpp"
#include "sim/cost_model.hpp"
#include "strategies/search/analytic_estimate.hpp"

namespace tandem {
namespace {

Seconds simulator_cost_s(const ComputeOp& op, const DeviceProfile& d) { return sim::compute_cost(op, d).seconds; }

// The 4-layer GPT of search-tiny-h100 on one H100 and one A100 node, 16 micro-batches per
// replica or more: long enough to be sketched.
Scenario mixed_base() {
  Scenario base = load_search_scenario("search-tiny-h100").base;
  base.cluster = select_nodes(find_cluster("mixed"), {1, 1, 0});
  base.training.global_batch_size = 128;
  return base;
}

std::vector<search::Candidate> pipelined_candidates(const Scenario& base) {
  search::SearchSpace space;
  space.tp = {1, 2};
  space.pp = {2, 4};
  space.micro_batch_size = {1, 2};
  space.schedule = {PipelineSchedule::one_f_one_b, PipelineSchedule::interleaved_1f1b};
  space.virtual_stages = {2};
  space.zero_stage = {0, 1};
  space.recompute = {Recompute::none, Recompute::full};
  space.sequence_parallel = {0, 1};
  return search::enumerate(search::complete_space(space, base.cluster, base.training), base.cluster, base.training)
      .candidates;
}

TEST(SketchBound, ComputeOnlyTraceKeepsEveryRanksComputeSums) {
  const Scenario base = mixed_base();
  int compared = 0;
  for (const search::Candidate& c : pipelined_candidates(base)) {
    if (c.pp != 4 || c.tp != 2 || c.zero_stage != 1 || c.micro_batch_size != 2) continue;  // a few, quickly
    const Scenario s = scenario_for(base, c);
    std::unique_ptr<Strategy> strategy;
    try {
      strategy = make_strategy(s);
    } catch (const InputError&) {
      continue;
    }
    const auto full = search::estimate_strategy(*strategy, s.cluster, simulator_cost_s);
    const auto compute =
        search::estimate_strategy(*strategy, s.cluster, simulator_cost_s, search::EstimateDetail::compute);
    ASSERT_EQ(full.ranks.size(), compute.ranks.size());
    for (std::size_t r = 0; r < full.ranks.size(); ++r) {
      EXPECT_DOUBLE_EQ(compute.ranks[r].compute_s, full.ranks[r].compute_s) << c.key() << " rank " << r;
      EXPECT_DOUBLE_EQ(compute.ranks[r].forward_s, full.ranks[r].forward_s) << c.key() << " rank " << r;
      EXPECT_DOUBLE_EQ(compute.ranks[r].backward_s, full.ranks[r].backward_s) << c.key() << " rank " << r;
    }
    EXPECT_LE(compute.iteration_time_s, full.iteration_time_s) << c.key();
    EXPECT_EQ(compute.peak_memory_bytes, 0) << "a compute estimate claims no memory";
    ++compared;
  }
  EXPECT_GE(compared, 4);
}

TEST(SketchBound, SketchIsTheCandidatesOwnComputeBoundAndBelowItsFullEstimate) {
  const Scenario base = mixed_base();
  SimulationEvaluator evaluator(base, 1);
  int sketched = 0, interleaved = 0, proportional = 0;
  for (const search::Candidate& c : pipelined_candidates(base)) {
    const search::Estimate sketch = evaluator.sketch_one(c);
    const search::Estimate full = evaluator.estimate_one(c);
    ASSERT_EQ(sketch.valid, full.valid) << c.key();
    if (!sketch.valid || !sketch.sketched) continue;
    const Scenario s = scenario_for(base, c);
    const auto own = search::estimate_strategy(*make_strategy(s), s.cluster, simulator_cost_s,
                                               search::EstimateDetail::compute);
    EXPECT_NEAR(sketch.iteration_time_s, own.iteration_time_s, 1e-9 * own.iteration_time_s) << c.key();
    EXPECT_LE(sketch.iteration_time_s, full.iteration_time_s * (1 + 1e-12)) << c.key();
    ++sketched;
    interleaved += c.schedule == PipelineSchedule::interleaved_1f1b;
    proportional += c.batch_split == BatchSplit::proportional || c.partition == HybridConfig::Partition::proportional;
  }
  EXPECT_GE(sketched, 20);
  EXPECT_GT(interleaved, 0);
  EXPECT_GT(proportional, 0);
}

TEST(SketchBound, ScheduleAndBatchSplitVariantsShareOneTwin) {
  search::Candidate a;
  a.tp = 2, a.pp = 4, a.dp = 2, a.schedule = PipelineSchedule::interleaved_1f1b, a.virtual_stages = 2;
  a.batch_split = BatchSplit::proportional;
  search::Candidate b = a;
  b.schedule = PipelineSchedule::one_f_one_b, b.virtual_stages = 1, b.batch_split = BatchSplit::even;
  EXPECT_EQ(sketch_twin(a, {6, 6, 6, 6}), sketch_twin(b, {6, 6, 6, 6}));
  EXPECT_TRUE(sketch_twin(a, {6, 6, 6, 6}).layers_per_stage.empty()) << "even stages stay uniform";
  // Uneven stages are written out, so that the twin holds the candidate's layers on every rank.
  a.partition = HybridConfig::Partition::proportional;
  EXPECT_EQ(sketch_twin(a, {8, 8, 4, 4}).layers_per_stage, (std::vector<int>{8, 8, 4, 4}));
  EXPECT_EQ(sketch_twin(a, {8, 8, 4, 4}).partition, HybridConfig::Partition::uniform);
}

}  // namespace
}  // namespace tandem
