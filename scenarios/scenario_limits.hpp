// Before any work: does this scenario fit, as numbers and on the machine running Tandem? Each
// knob is bounded on its own when it is read (common/input_limits.hpp); these checks bound their
// products, computed in long double so that nothing overflows on the way: the model's size (its
// parameters and one micro-batch's activations must stay inside 64-bit arithmetic) and the
// simulation's own size (ops to simulate and memory to hold them). Each refusal is an InputError
// at the knob that weighs most, with the estimate and the limit in the message.
#pragma once

#include "scenarios/scenario.hpp"

namespace tandem {

// Parameters and activation elements of the scenario's model (InputError past the limits).
void check_model_size(const Scenario& scenario);

// What simulating the scenario with `options` would cost this process (options.record_trace:
// every op kept as a trace record, and no replica folding, as `simulate --trace` does).
struct SimulationSize {
  long double simulated_ranks = 0;
  long double micro_batches = 0;   // per replica and iteration
  long double layers_per_rank = 0;
  long double iterations = 0;      // warm-up included
  long double ops = 0;             // issued by all simulated ranks over all iterations
  long double memory_bytes = 0;    // this process's peak, estimated
};
SimulationSize estimate_simulation_size(const Scenario& scenario, const sim::SimulationOptions& options);

// The kernel's limit on a process's memory mappings (/proc/sys/vm/max_map_count; Linux's default,
// 65,530, when it cannot be read): SimGrid's actors need two each.
long double max_map_count();

// InputError when the estimate exceeds the limits (kMaxSimulatedOps, or the memory this machine has);
// the estimate otherwise.
SimulationSize check_simulation_size(const Scenario& scenario, const sim::SimulationOptions& options);

}  // namespace tandem
