#include "strategies/search/objective.hpp"

#include <limits>
#include <stdexcept>

namespace tandem::search {

const char* to_string(Objective objective) {
  switch (objective) {
    case Objective::time: return "time";
    case Objective::cost: return "cost";
    case Objective::energy: return "energy";
  }
  return "?";
}

Objective parse_objective(const std::string& text) {
  if (text == "time") return Objective::time;
  if (text == "cost") return Objective::cost;
  if (text == "energy") return Objective::energy;
  throw std::invalid_argument("unknown objective '" + text + "' (expected time, cost or energy)");
}

const char* unit_of(Objective objective) {
  switch (objective) {
    case Objective::time: return "s";
    case Objective::cost: return "USD";
    case Objective::energy: return "J";
  }
  return "";
}

double usd_per_s(const Cluster& cluster, int world) {
  double per_hour = 0;
  for (int r = 0; r < world; ++r) per_hour += cluster.device_of(r).price_per_hour_usd;
  return per_hour / 3600.0;
}

bool all_priced(const Cluster& cluster, int world) {
  for (int r = 0; r < world; ++r)
    if (!(cluster.device_of(r).price_per_hour_usd > 0)) return false;
  return true;
}

double objective_value(Objective objective, const Evaluation& e, const Constraints& constraints) {
  if (!e.ok || !constraints.fits(e.memory_fraction)) return std::numeric_limits<double>::infinity();
  switch (objective) {
    case Objective::time: return e.iteration_time_s;
    case Objective::cost: return e.usd_per_iteration();
    case Objective::energy: return e.energy_per_iteration_j;
  }
  return std::numeric_limits<double>::infinity();
}

double objective_lower_bound(Objective objective, const Estimate& e) {
  switch (objective) {
    case Objective::time: return e.iteration_time_s;
    case Objective::cost: return e.iteration_time_s * e.usd_per_s;
    case Objective::energy: return e.energy_per_iteration_j;
  }
  return 0;
}

}  // namespace tandem::search
