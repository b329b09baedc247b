#include "cli/simulated_iterations.hpp"

#include <cstdio>
#include <stdexcept>

#include "common/process_pool.hpp"

namespace tandem::cli {

std::vector<Seconds> simulated_iteration_s(const std::vector<StrategyMaker>& strategies, const Cluster& cluster,
                                           const sim::SimulationOptions& options, const std::string& what) {
  const auto outcomes = run_in_processes(
      strategies.size(),
      [&](std::size_t i) {
        const std::unique_ptr<Strategy> strategy = strategies[i]();
        char text[64];  // the double's every digit: the parent reads back what the child computed
        std::snprintf(text, sizeof text, "%.17g", sim::simulate(*strategy, cluster, options).iteration_time_s);
        return std::string(text);
      },
      2);
  std::vector<Seconds> times;
  for (const auto& o : outcomes) {
    if (!o.ok) throw std::runtime_error(what + ": " + o.error);
    times.push_back(std::stod(o.output));
  }
  return times;
}

}  // namespace tandem::cli
