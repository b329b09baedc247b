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
  return inputs;
}

}  // namespace tandem
