// The search's real evaluator: estimates (strategies built and traced on a ledger,
// search/analytic_estimate.hpp) shared among `workers` forked processes when there are many, and
// simulations in forked worker processes, one per candidate (SimGrid holds one engine per
// process), `workers` at a time. A result does not
// depend on which worker computed it, so the search's answer is the same for any worker count.
//
// This pool uses the cores of one machine; distributed/mpi_search.hpp spreads the same work over
// MPI ranks.
#pragma once

#include <array>
#include <functional>
#include <map>
#include <optional>
#include <vector>

#include "scenarios/convergence_table.hpp"
#include "scenarios/reliability_spec.hpp"
#include "scenarios/scenario.hpp"
#include "sim/prediction.hpp"
#include "strategies/search/analytic_estimate.hpp"
#include "strategies/search/search.hpp"

namespace tandem {

class SimulationEvaluator final : public search::Evaluator {
 public:
  // `on_simulated` is called in this process as each simulation finishes (progress). With
  // `reliability`, each evaluation also carries the candidate's expected goodput and time to
  // train the target (search::Objective::time_to_train). With `convergence`, each estimate carries
  // the steps its strategy measured to the target loss (a strategy the file did not measure, or
  // one that never reached the target, is invalid, saying so) and each evaluation the time to it
  // (search::Objective::time_to_target_loss).
  SimulationEvaluator(Scenario base, int workers, std::function<void()> on_simulated = {},
                      std::optional<ReliabilitySpec> reliability = std::nullopt,
                      std::optional<ConvergenceTable> convergence = std::nullopt);

  std::vector<search::Estimate> estimate(const std::vector<search::Candidate>& candidates) override;
  // A pipeline of many micro-batches: its sketch twin (below) is traced with 2 and 3 micro-batches
  // per replica, compute only, and the candidate's compute bound extrapolated from them
  // (analytic_estimate.hpp); candidates sharing a twin share its traces. Anything else is
  // estimated in full.
  std::vector<search::Estimate> sketch(const std::vector<search::Candidate>& candidates) override;
  std::vector<search::Evaluation> evaluate(const std::vector<search::Candidate>& candidates) override;

  // One candidate, here and now (what a worker runs): simulate() may run once per process.
  search::Evaluation simulate_here(const search::Candidate& candidate) const;
  search::Estimate estimate_one(const search::Candidate& candidate) const;
  search::Estimate sketch_one(const search::Candidate& candidate) const;

 private:
  // estimate_one or sketch_one of each candidate, in order; many candidates are shared among the
  // workers (those that may share a sketch twin together).
  std::vector<search::Estimate> in_workers(const std::vector<search::Candidate>& candidates, bool sketch) const;

  double target_tokens() const { return reliability_ ? reliability_->target_tokens : 0; }

  Scenario base_;
  int workers_;
  std::function<void()> on_simulated_;
  std::optional<ReliabilitySpec> reliability_;
  std::optional<ConvergenceTable> convergence_;
  // Short traces of each sketch twin met so far (at 2 and 3 micro-batches per replica).
  mutable std::map<search::Candidate, std::array<search::AnalyticEstimate, 2>> twin_traces_;
};

// The candidate whose compute traces stand for a pipelined candidate's in a sketch: each rank holds
// the same layers (`layers_per_stage`, the candidate's per stage, all its chunks together) in one
// chunk under 1F1B, with an even batch split. A rank's compute sums do not depend on the order the
// schedule issues its ops in, nor on its replica's micro-batch count, which the extrapolation
// takes from the candidate itself: interleaved and non-interleaved schedules, even and
// proportional batch splits of one plan share one twin.
search::Candidate sketch_twin(const search::Candidate& candidate, const std::vector<int>& layers_per_stage);

// The prediction of a simulated scenario, condensed for the search.
search::Evaluation evaluation_of(const sim::Prediction& prediction, const Cluster& cluster);

// The full prediction of one scenario (simulated in this process), of its strategy as built.
sim::Prediction predict(const Scenario& scenario);
sim::Prediction predict(const Scenario& scenario, const Strategy& strategy);

}  // namespace tandem
