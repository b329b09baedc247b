// What one restart of a job costs, and how long until it is back where it failed: the formula
// `tandem goodput` charges every failure with and `tandem run --elastic` predicts its measured
// recoveries with.
//   restart   = stop + relaunch + init + reload + warm-up iterations x iteration
//   recovered = restart + lost iterations x iteration (the work since the last checkpoint, again)
#pragma once

#include "common/units.hpp"

namespace tandem::sim::reliability {

struct RestartCost {
  Seconds stop_s = 0;      // the failed job's processes ended (its other ranks torn down)
  Seconds relaunch_s = 0;  // scheduler, process start
  Seconds init_s = 0;      // communicators, model build
  Seconds reload_s = 0;    // the checkpoint read back
  int warmup_iterations = 0;  // slower iterations after a restart, counted as lost
};

Seconds restart_s(const RestartCost& cost, Seconds iteration_s);
Seconds recovered_s(const RestartCost& cost, Seconds iteration_s, int lost_iterations);

}  // namespace tandem::sim::reliability
