// The simulator's iteration time for strategies `run` measures (its predictions beside the
// measured figures: a re-balanced run's two parts, an elastic run's re-planned jobs). SimGrid
// runs one engine per process, so each strategy is simulated in a child process of its own.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "platforms/cluster.hpp"
#include "sim/simulation.hpp"
#include "strategies/strategy.hpp"

namespace tandem::cli {

using StrategyMaker = std::function<std::unique_ptr<Strategy>()>;

// Each made strategy's simulated iteration time on `cluster` under `options`. Throws
// std::runtime_error starting with `what` when a simulation fails.
std::vector<Seconds> simulated_iteration_s(const std::vector<StrategyMaker>& strategies, const Cluster& cluster,
                                           const sim::SimulationOptions& options, const std::string& what);

}  // namespace tandem::cli
