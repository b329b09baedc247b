// Writes a scenario as YAML that load_scenario reads back to the same model, cluster, training,
// strategy and simulation options: how `tandem search` hands its winner to `tandem simulate` and
// `tandem run` unchanged.
#pragma once

#include <string>

#include "scenarios/scenario.hpp"

namespace tandem {

// `header`: comment lines put at the top (each prefixed with "# ").
std::string scenario_yaml(const Scenario& scenario, const std::string& header = "");
// Written atomically (a reader never sees half a file).
void write_scenario(const Scenario& scenario, const std::string& path, const std::string& header = "");

}  // namespace tandem
