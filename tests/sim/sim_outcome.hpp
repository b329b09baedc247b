// One simulation's outcome, simulated in a forked child (one SimGrid engine per process): its
// iteration time, energy, each rank's breakdown and peak memory, how it was folded, how long it
// took and how much memory the simulation itself needed. Tests compare coarsened forms with exact
// ones through it (folding_test_support.hpp); benchmarks time it.
#pragma once

#include <sys/resource.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "platforms/cluster.hpp"
#include "sim/simulation.hpp"
#include "tests/sim/sim_test_support.hpp"

namespace tandem::sim_test {

struct Outcome {
  double iteration_s = 0, energy_j = 0, wall_s = 0;
  double rss_bytes = 0;  // peak resident memory of the simulating process
  double ops = 0;        // ops the simulated ranks issued
  int simulated_ranks = 0;
  std::string folding;
  std::vector<double> compute_s, exposed_s, idle_s, peak_bytes;
};

// Peak resident memory of this process so far, or of the largest child it waited for (pipeline
// extrapolation simulates in child processes).
inline double peak_rss_bytes() {
  rusage self{}, children{};
  getrusage(RUSAGE_SELF, &self);
  getrusage(RUSAGE_CHILDREN, &children);
  return static_cast<double>(std::max(self.ru_maxrss, children.ru_maxrss)) * 1024.0;
}

// Simulates the strategy `make(cluster)` returns on the bundled cluster `cluster_name` (or one
// given as a Cluster) with `options`, in a child.
template <class Make>
Outcome simulate_outcome(const Cluster& cluster, const sim::SimulationOptions& options, Make make,
                         unsigned timeout_s = 600) {
  auto child = run_in_child([&] {
    auto strategy = make(cluster);
    const sim::SimulationResult r = sim::simulate(*strategy, cluster, options);
    nlohmann::json j;
    j["iteration_s"] = r.iteration_time_s;
    j["energy_j"] = r.energy_per_iteration_j;
    j["wall_s"] = r.wall_time_s;
    j["simulated_ranks"] = r.simulated_ranks;
    j["rss_bytes"] = peak_rss_bytes();
    j["ops"] = r.compute_ops + r.comm_ops;
    j["folding"] = r.folding;
    for (const auto& rank : r.ranks) {
      j["compute"].push_back(rank.compute_s);
      j["exposed"].push_back(rank.exposed_comm_s);
      j["idle"].push_back(rank.idle_s);
      j["peak"].push_back(rank.peak_memory_bytes);
    }
    return j.dump();
  }, timeout_s);
  if (!child.ok) throw std::runtime_error(child.describe());
  const nlohmann::json j = nlohmann::json::parse(std::string(child.output));
  Outcome o;
  o.iteration_s = j["iteration_s"];
  o.energy_j = j["energy_j"];
  o.wall_s = j["wall_s"];
  o.simulated_ranks = j["simulated_ranks"];
  o.rss_bytes = j["rss_bytes"];
  o.ops = j["ops"];
  o.folding = j["folding"];
  o.compute_s = j["compute"].get<std::vector<double>>();
  o.exposed_s = j["exposed"].get<std::vector<double>>();
  o.idle_s = j["idle"].get<std::vector<double>>();
  o.peak_bytes = j["peak"].get<std::vector<double>>();
  return o;
}

template <class Make>
Outcome simulate_outcome(const std::string& cluster_name, const sim::SimulationOptions& options, Make make) {
  return simulate_outcome(find_cluster(cluster_name), options, make);
}

inline double relative(double a, double b) { return std::abs(a - b) / std::max(std::abs(b), 1e-30); }

}  // namespace tandem::sim_test
