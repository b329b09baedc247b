#include "scenarios/candidate_scenario.hpp"

namespace tandem {

Scenario scenario_for(const Scenario& base, const search::Candidate& c) {
  Scenario s = base;
  s.strategy_type = "hybrid";
  s.training.micro_batch_size = c.micro_batch_size;
  ParallelConfig& p = s.parallel;
  p.tensor_model_parallel_size = c.tp;
  p.pipeline_model_parallel_size = c.pp;
  p.data_parallel_size = c.dp;
  p.sequence_parallel = c.sequence_parallel;
  p.zero_stage = c.zero_stage;
  p.recompute_granularity = c.recompute;
  p.batch_split = c.batch_split;
  HybridConfig& h = s.hybrid;
  h.schedule = c.schedule;
  h.virtual_stages = c.virtual_stages;
  h.order = c.order;
  h.partition = c.partition;
  h.layers_per_stage = c.layers_per_stage;
  return s;
}

search::Candidate candidate_of(const Scenario& s) {
  search::Candidate c;
  c.tp = s.parallel.tensor_model_parallel_size;
  c.pp = s.parallel.pipeline_model_parallel_size;
  c.dp = s.parallel.data_parallel_size;
  c.micro_batch_size = s.training.micro_batch_size;
  c.sequence_parallel = s.parallel.sequence_parallel;
  c.zero_stage = s.parallel.zero_stage;
  c.recompute = s.parallel.recompute_granularity;
  c.batch_split = s.parallel.batch_split;
  c.schedule = s.hybrid.schedule;
  c.virtual_stages = s.hybrid.virtual_stages;
  c.order = s.hybrid.order;
  c.partition = s.hybrid.partition;
  c.layers_per_stage = s.hybrid.layers_per_stage;
  return c;
}

}  // namespace tandem
