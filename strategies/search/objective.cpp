#include "strategies/search/objective.hpp"

#include <limits>
#include <stdexcept>

namespace tandem::search {

const char* to_string(Objective objective) {
  switch (objective) {
    case Objective::time: return "time";
    case Objective::cost: return "cost";
    case Objective::energy: return "energy";
    case Objective::time_to_train: return "time_to_train";
    case Objective::time_to_target_loss: return "time_to_target_loss";
  }
  return "?";
}

Objective parse_objective(const std::string& text) {
  if (text == "time") return Objective::time;
  if (text == "cost") return Objective::cost;
  if (text == "energy") return Objective::energy;
  if (text == "time_to_train") return Objective::time_to_train;
  if (text == "time_to_target_loss") return Objective::time_to_target_loss;
  throw std::invalid_argument("unknown objective '" + text +
                              "' (expected time, cost, energy, time_to_train or time_to_target_loss)");
}

const char* unit_of(Objective objective) {
  switch (objective) {
    case Objective::time: return "s";
    case Objective::cost: return "USD";
    case Objective::energy: return "J";
    case Objective::time_to_train: return "s";
    case Objective::time_to_target_loss: return "s";
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
    // 0 when the evaluator was given no reliability target: never a winner by accident.
    case Objective::time_to_train:
      return e.time_to_train_s > 0 ? e.time_to_train_s : std::numeric_limits<double>::infinity();
    case Objective::time_to_target_loss:
      return e.time_to_target_loss_s > 0 ? e.time_to_target_loss_s : std::numeric_limits<double>::infinity();
  }
  return std::numeric_limits<double>::infinity();
}

double objective_lower_bound(Objective objective, const Estimate& e) {
  switch (objective) {
    case Objective::time: return e.iteration_time_s;
    case Objective::cost: return e.iteration_time_s * e.usd_per_s;
    case Objective::energy: return e.energy_per_iteration_j;
    // Goodput is at most 1: the failure-free time to train bounds the expected one.
    case Objective::time_to_train: return e.iteration_time_s * e.iterations_to_train;
    case Objective::time_to_target_loss: return e.iteration_time_s * e.steps_to_target_loss;
  }
  return 0;
}

}  // namespace tandem::search
