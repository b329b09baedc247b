// `tandem explain SCENARIO`: the scenario as the simulator will take it, every field written out
// (scenario_writer.hpp: what load_scenario reads back to the same scenario), each line saying where
// its value came from: the file's line, or a default (of the reader, the preset, the strategy).
#pragma once

#include <string>

#include "scenarios/scenario.hpp"

namespace tandem {

std::string explained_scenario_yaml(const Scenario& scenario);

}  // namespace tandem
