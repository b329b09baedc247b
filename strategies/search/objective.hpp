// What "best" means: the quantity a search minimises, its lower bound before simulating, and the
// constraints a strategy must meet (a memory headroom). Equal values are ordered by the canonical
// candidate order, so rankings never depend on the order results arrive in.
#pragma once

#include <string>

#include "platforms/cluster.hpp"
#include "strategies/search/candidate.hpp"
#include "strategies/search/evaluation.hpp"

namespace tandem::search {

// time: seconds per iteration; cost: US dollars per iteration (the inverse of throughput per
// dollar, since the batch is fixed), from each device's price per hour; energy: joules per
// iteration; time_to_train: expected wall seconds to train the scenario's reliability target
// (reliability.target_tokens), failures, checkpoints and restarts included (Evaluation::goodput):
// a plan on more devices fails more often and may lose what its speed gains;
// time_to_target_loss: the steps the plan's strategy took to a target loss in a measured
// convergence file (scenarios/convergence_table.hpp) times its simulated step: a compressed or
// asynchronous plan's faster steps weighed against the extra steps it needs.
enum class Objective { time, cost, energy, time_to_train, time_to_target_loss };
const char* to_string(Objective objective);
Objective parse_objective(const std::string& text);  // std::invalid_argument
const char* unit_of(Objective objective);            // "s", "USD", "J", "s", "s"

// The price per second of ranks 0..world-1 (0 when a device has no price).
double usd_per_s(const Cluster& cluster, int world);
// Whether every device of ranks 0..world-1 has a price (the cost objective needs one).
bool all_priced(const Cluster& cluster, int world);

struct Constraints {
  double memory_headroom = 0;  // fraction of each device's memory kept free (0..1)
  bool fits(double memory_fraction) const { return memory_fraction <= 1.0 - memory_headroom; }
};

// +infinity for a failed simulation or one that breaks the constraints.
double objective_value(Objective objective, const Evaluation& e, const Constraints& constraints);
double objective_lower_bound(Objective objective, const Estimate& e);

// A candidate with its objective value: the ranking order (value, then canonical candidate).
struct Ranked {
  double value;
  Candidate candidate;
  auto operator<=>(const Ranked&) const = default;
};

}  // namespace tandem::search
