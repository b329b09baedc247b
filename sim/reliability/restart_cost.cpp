#include "sim/reliability/restart_cost.hpp"

namespace tandem::sim::reliability {

Seconds restart_s(const RestartCost& cost, Seconds iteration_s) {
  return cost.stop_s + cost.relaunch_s + cost.init_s + cost.reload_s + cost.warmup_iterations * iteration_s;
}

Seconds recovered_s(const RestartCost& cost, Seconds iteration_s, int lost_iterations) {
  return restart_s(cost, iteration_s) + lost_iterations * iteration_s;
}

}  // namespace tandem::sim::reliability
