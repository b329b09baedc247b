#include "scenarios/prediction_inputs.hpp"

namespace tandem {

sim::PredictionInputs prediction_inputs(const Scenario& scenario, const Strategy& strategy) {
  sim::PredictionInputs inputs;
  inputs.scenario = scenario.name;
  inputs.strategy = strategy.name();
  inputs.model = make_model(scenario.model)->describe();
  inputs.sequences_per_iteration = strategy.sequences_per_iteration();
  inputs.seq_length = scenario.training.seq_length;
  inputs.precision = scenario.training.precision;
  // Dropless routing is priced at the busiest expert's expected load (the CPU backend computes
  // full buffers, correct whatever the routing): say which load, and that a real router's may be
  // worse than a balanced one's.
  if (scenario.model.kind == ModelSpec::Kind::transformer) {
    const TransformerConfig& t = scenario.model.transformer;
    if (t.moe() && t.moe_expert_capacity_factor <= 0) {
      const std::int64_t tokens = scenario.training.micro_batch_size * scenario.training.seq_length /
                                  std::max(1, scenario.parallel.context_parallel_size);
      const std::int64_t rows = t.expected_busiest_expert_rows(tokens);
      const double balanced = static_cast<double>(tokens) * static_cast<double>(t.moe_router_topk) /
                              static_cast<double>(t.num_moe_experts);
      char ratio[32];
      std::snprintf(ratio, sizeof ratio, "%.3f", static_cast<double>(rows) / balanced);
      inputs.caveats.push_back(
          "dropless routing (model.moe_expert_capacity_factor 0) is priced at the busiest expert's expected load, " +
          std::to_string(rows) + " of a micro-batch's " + std::to_string(tokens) + " tokens per expert (" + ratio +
          "x the balanced share" +
          (t.moe_router_load_imbalance > 0 ? ", model.moe_router_load_imbalance"
                                           : ": a balanced router's statistical floor; a trained router's is "
                                             "higher: set model.moe_router_load_imbalance to a measured max/mean ratio") +
          ")");
    }
  }
  // Stragglers that come and go are the horizon's (`tandem goodput`), not this iteration's.
  for (const StragglerSpec& s : transient_stragglers(scenario.stragglers))
    inputs.caveats.push_back(s.field + " (line " + std::to_string(s.line) +
                             ") comes and goes (episodes): not in this iteration; `tandem goodput` plays its episodes");
  // A stale update is faster per step, not per unit of progress: what it costs in loss is measured
  // on the CPU backend, not priced here.
  if (scenario.parallel.parameter_server_staleness > 0)
    inputs.caveats.push_back("parameter-server updates " + std::to_string(scenario.parallel.parameter_server_staleness) +
                             " step(s) stale: the time is per step; staler updates need more steps to reach a loss "
                             "(measured on the CPU backend: README, stale-synchronous servers)");
  return inputs;
}

}  // namespace tandem
