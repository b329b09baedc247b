// What sim::summarize needs to know about a scenario beyond the simulation result (model FLOPs,
// sequences per iteration, precision), in one place for `simulate` and `search`.
#pragma once

#include "scenarios/scenario.hpp"
#include "sim/prediction.hpp"

namespace tandem {

sim::PredictionInputs prediction_inputs(const Scenario& scenario, const Strategy& strategy);

}  // namespace tandem
