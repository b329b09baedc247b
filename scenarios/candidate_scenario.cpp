#include "scenarios/candidate_scenario.hpp"

#include "platforms/cluster_selection.hpp"

namespace tandem {

namespace {

// Every knob a candidate and a scenario share, as (scenario field, candidate field) pairs: the
// one list both directions go through, so that a knob added to the search is carried both ways.
template <class S, class C, class F>
void each_knob(S& s, C& c, F&& f) {
  f(s.parallel.tensor_model_parallel_size, c.tp);
  f(s.parallel.pipeline_model_parallel_size, c.pp);
  f(s.parallel.data_parallel_size, c.dp);
  f(s.training.micro_batch_size, c.micro_batch_size);
  f(s.parallel.sequence_parallel, c.sequence_parallel);
  f(s.parallel.zero_stage, c.zero_stage);
  f(s.parallel.offload_optimizer, c.offload_optimizer);
  f(s.parallel.recompute_granularity, c.recompute);
  f(s.parallel.batch_split, c.batch_split);
  f(s.parallel.local_sgd_steps, c.local_sgd_steps);
  f(s.parallel.local_sgd_group_size, c.local_sgd_group_size);
  f(s.parallel.context_parallel_size, c.cp);
  f(s.parallel.expert_model_parallel_size, c.ep);
  f(s.parallel.parameter_servers, c.parameter_servers);
  f(s.parallel.parameter_server_staleness, c.parameter_server_staleness);
  f(s.parallel.parameter_server_optimizer, c.parameter_server_optimizer);
  f(s.parallel.parameter_server_asynchronous, c.parameter_server_asynchronous);
  f(s.training.fp8, c.fp8);
  f(s.hybrid.schedule, c.schedule);
  f(s.hybrid.virtual_stages, c.virtual_stages);
  f(s.hybrid.order, c.order);
  f(s.hybrid.partition, c.partition);
  f(s.hybrid.layers_per_stage, c.layers_per_stage);
}

}  // namespace

Scenario scenario_for(const Scenario& base, const search::Candidate& c) {
  Scenario s = base;
  // Parameter servers are data parallelism's own (the hybrid strategy has none).
  s.strategy_type = c.parameter_servers > 0 ? "data_parallel" : "hybrid";
  each_knob(s, c, [](auto& in_scenario, const auto& in_candidate) { in_scenario = in_candidate; });
  // The software the base names overlaps SP's collectives; candidates without SP have none to.
  s.parallel.tp_comm_overlap = base.parallel.tp_comm_overlap && c.sequence_parallel;
  s.parallel.overlap_param_gather = base.parallel.overlap_param_gather && (c.zero_stage == 1 || c.zero_stage == 2);
  if (!c.nodes.empty()) s.cluster = select_nodes(base.cluster, c.nodes);
  return s;
}

search::Candidate candidate_of(const Scenario& s) {
  search::Candidate c;
  each_knob(s, c, [](const auto& in_scenario, auto& in_candidate) { in_candidate = in_scenario; });
  return c;
}

}  // namespace tandem
