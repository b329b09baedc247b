// What `tandem goodput` plays over the horizon, built from a reliability scenario and the one
// simulation of its failure-free iteration: the job's failure streams (its devices, nodes and
// leaf switches), the checkpoint's size and costs through the modeled storage, the restart's cost.
#pragma once

#include "scenarios/reliability_spec.hpp"
#include "sim/reliability/failure_streams.hpp"
#include "sim/reliability/goodput_model.hpp"
#include "sim/simulation.hpp"

namespace tandem {

struct GoodputSetup {
  sim::reliability::GoodputModel model;  // interval_s: the scenario's, or 0 when it is to be swept
  sim::reliability::JobShape job;
  Bytes checkpoint_bytes = 0;
  Bytes snapshot_bytes_per_device = 0;  // the largest rank's parameters + optimizer state
  Seconds write_s = 0;                  // the whole checkpoint to storage
  Seconds reload_s = 0;                 // and back, on restart
  Seconds snapshot_s = 0;               // async: device -> host memory
  BytesPerSecond per_node_bytes_per_s = 0;
};

GoodputSetup goodput_setup(const ReliabilityScenario& scenario, const Strategy& strategy,
                           const sim::SimulationResult& iteration);

}  // namespace tandem
