// One line saying what an input file describes (`tandem check`): its devices, nodes and links,
// or its model, cluster and strategy, so that a file that loads but says something else than
// meant shows it at a glance.
#pragma once

#include <string>

#include "platforms/cluster.hpp"
#include "platforms/device.hpp"
#include "scenarios/scenario.hpp"
#include "scenarios/search_spec.hpp"

namespace tandem::cli {

std::string describe(const DeviceProfile& device);
std::string describe(const Cluster& cluster);
std::string describe(const Scenario& scenario);
std::string describe(const SearchScenario& search);

}  // namespace tandem::cli
