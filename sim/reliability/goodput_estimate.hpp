// Monte Carlo over many trials of goodput_model.hpp: goodput and time lost by cause over a
// horizon, expected time to train a number of tokens with its confidence interval, and the
// checkpoint interval that maximises goodput, found by sweep. Trial k of seed s plays the
// sub-stream RandomStream::derive(s, k), so every estimate is deterministic per seed and a sweep
// compares its intervals on the same failures.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "sim/reliability/goodput_model.hpp"

namespace tandem::sim::reliability {

// A mean over trials, and its 95% confidence interval (normal approximation: mean +- 1.96
// standard errors; the trials are independent and their count is in the tens or more).
struct Estimate {
  double mean = 0;
  double low = 0;
  double high = 0;
  double stddev = 0;
  int samples = 0;
};
// The interval is clipped to [lowest, highest], what the quantity can be (a share: [0, 1]): the
// normal approximation would put it past a bound that the samples sit close to.
Estimate estimate_of(const std::vector<double>& samples, double lowest = 0,
                     double highest = std::numeric_limits<double>::infinity());

struct HorizonEstimate {
  Seconds horizon_s = 0;
  int trials = 0;
  Estimate goodput;           // useful / horizon
  Estimate tokens_per_s;      // useful tokens / horizon
  Estimate failures;          // per trial
  // Mean seconds per trial in each part (they sum to the horizon).
  Seconds useful_s = 0, degraded_s = 0, slowed_s = 0, checkpoint_s = 0, regrow_s = 0;
  std::vector<std::string> causes;
  std::vector<Seconds> lost_s, restart_s, waiting_s;  // by cause
};
HorizonEstimate estimate_horizon(const GoodputModel& model, Seconds horizon_s, int trials, std::uint64_t seed);

struct TimeToTrain {
  double tokens = 0;
  Seconds failure_free_s = 0;  // tokens / failure-free throughput
  Estimate wall_s;             // over the trials that reached the target
  Seconds p10_s = 0, p90_s = 0;
  int unfinished = 0;          // trials that hit the cap (100x the failure-free time)
};
TimeToTrain estimate_time_to_train(const GoodputModel& model, double tokens, int trials, std::uint64_t seed);

struct SweepPoint {
  Seconds interval_s = 0;
  double goodput = 0;  // mean over the trials
};
struct IntervalSweep {
  std::vector<SweepPoint> points;
  Seconds best_interval_s = 0;  // the vertex of a parabola (in log interval) through the best point and its neighbours
  double best_goodput = 0;
  Seconds young_s = 0;
  Seconds daly_s = 0;
  Seconds mtbf_s = 0;
};
// Goodput at `points` intervals spaced geometrically over [low_s, high_s] (Young's interval lies
// inside unless the caller says otherwise), each over the same trials.
IntervalSweep sweep_interval(const GoodputModel& model, Seconds low_s, Seconds high_s, int points, Seconds horizon_s,
                             int trials, std::uint64_t seed);

}  // namespace tandem::sim::reliability
