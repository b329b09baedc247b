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
  // Dropless routing computes full buffers (correct on the CPU backend, whatever the routing), so
  // the simulator prices every expert at all of a rank's tokens: E/k times a balanced run's work.
  if (scenario.model.kind == ModelSpec::Kind::transformer) {
    const TransformerConfig& t = scenario.model.transformer;
    if (t.moe() && t.moe_expert_capacity_factor <= 0 && t.num_moe_experts > t.moe_router_topk)
      inputs.caveats.push_back(
          "dropless routing (model.moe_expert_capacity_factor 0) is priced at full expert buffers, " +
          std::to_string(t.num_moe_experts / t.moe_router_topk) +
          "x a balanced run's expert work and all-to-all bytes: set moe_expert_capacity_factor (e.g. 1.25) to "
          "price a run balanced within that factor");
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
