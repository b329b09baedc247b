#include "sim/reliability/goodput_estimate.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "sim/reliability/checkpoint_interval.hpp"
#include "sim/reliability/random_stream.hpp"

namespace tandem::sim::reliability {

namespace {
constexpr double kZ95 = 1.959963984540054;  // two-sided 95% quantile of the standard normal
// A training run that takes 100x its failure-free time is not training: the trial stops there.
constexpr double kTimeToTrainCap = 100;

double quantile(std::vector<double> sorted, double q) {
  if (sorted.empty()) return 0;
  std::sort(sorted.begin(), sorted.end());
  const double place = q * static_cast<double>(sorted.size() - 1);
  const auto below = static_cast<std::size_t>(std::floor(place));
  const std::size_t above = std::min(below + 1, sorted.size() - 1);
  return sorted[below] + (place - static_cast<double>(below)) * (sorted[above] - sorted[below]);
}
}  // namespace

Estimate estimate_of(const std::vector<double>& samples, double lowest, double highest) {
  Estimate e;
  e.samples = static_cast<int>(samples.size());
  if (samples.empty()) return e;
  double sum = 0;
  for (double x : samples) sum += x;
  e.mean = sum / e.samples;
  double squares = 0;
  for (double x : samples) squares += (x - e.mean) * (x - e.mean);
  e.stddev = e.samples > 1 ? std::sqrt(squares / (e.samples - 1)) : 0;
  const double half = kZ95 * e.stddev / std::sqrt(static_cast<double>(e.samples));
  e.low = std::max(lowest, e.mean - half);
  e.high = std::min(highest, e.mean + half);
  return e;
}

HorizonEstimate estimate_horizon(const GoodputModel& model, Seconds horizon_s, int trials, std::uint64_t seed) {
  if (trials < 1) throw std::invalid_argument("trials: at least one");
  if (!(horizon_s > 0)) throw std::invalid_argument("horizon: must be positive");
  HorizonEstimate h;
  h.horizon_s = horizon_s;
  h.trials = trials;
  for (const FailureStream& f : model.failures) h.causes.push_back(f.cause);
  h.lost_s.assign(model.failures.size(), 0);
  h.restart_s.assign(model.failures.size(), 0);
  h.waiting_s.assign(model.failures.size(), 0);
  std::vector<double> goodput, tokens, failures;
  for (int k = 0; k < trials; ++k) {
    const GoodputTally t = run_trial(model, horizon_s, RandomStream::derive(seed, k));
    goodput.push_back(t.goodput());
    tokens.push_back(t.useful_s / model.iteration_s * model.tokens_per_iteration / horizon_s);
    failures.push_back(t.failures);
    h.useful_s += t.useful_s / trials;
    h.degraded_s += t.degraded_s / trials;
    h.slowed_s += t.slowed_s / trials;
    h.checkpoint_s += t.checkpoint_s / trials;
    h.regrow_s += t.regrow_s / trials;
    for (std::size_t c = 0; c < model.failures.size(); ++c) {
      h.lost_s[c] += t.lost_by_cause[c] / trials;
      h.restart_s[c] += t.restart_by_cause[c] / trials;
      h.waiting_s[c] += t.waiting_by_cause[c] / trials;
    }
  }
  h.goodput = estimate_of(goodput, 0, 1);
  h.tokens_per_s = estimate_of(tokens);
  h.failures = estimate_of(failures);
  return h;
}

TimeToTrain estimate_time_to_train(const GoodputModel& model, double tokens, int trials, std::uint64_t seed) {
  if (!(tokens > 0)) throw std::invalid_argument("tokens: must be positive");
  if (trials < 1) throw std::invalid_argument("trials: at least one");
  TimeToTrain r;
  r.tokens = tokens;
  r.failure_free_s = tokens / model.tokens_per_iteration * model.iteration_s;
  std::vector<double> walls;
  for (int k = 0; k < trials; ++k) {
    // Its own sub-streams (offset by the trial count): independent of the horizon estimate's.
    const GoodputTally t = run_trial(model, kTimeToTrainCap * r.failure_free_s,
                                     RandomStream::derive(seed, static_cast<std::uint64_t>(trials) + k), r.failure_free_s);
    if (t.reached_target) walls.push_back(t.duration_s);
    else ++r.unfinished;
  }
  r.wall_s = estimate_of(walls);
  // The normal interval of a heavy-tailed sample can reach below what no trial can beat: the
  // failure-free time bounds the mean from below.
  r.wall_s.low = std::max(r.wall_s.low, r.failure_free_s);
  r.p10_s = quantile(walls, 0.1);
  r.p90_s = quantile(walls, 0.9);
  return r;
}

IntervalSweep sweep_interval(const GoodputModel& model, Seconds low_s, Seconds high_s, int points, Seconds horizon_s,
                             int trials, std::uint64_t seed) {
  if (points < 3 || !(low_s > 0) || !(high_s > low_s)) throw std::invalid_argument("sweep: at least 3 points over a range");
  IntervalSweep s;
  const double rate = model.total_failure_rate_per_s();
  s.mtbf_s = rate > 0 ? 1 / rate : std::numeric_limits<double>::infinity();
  s.young_s = young_interval_s(model.checkpoint.blocking_s, s.mtbf_s);
  s.daly_s = daly_interval_s(model.checkpoint.blocking_s, s.mtbf_s);
  const double step = std::log(high_s / low_s) / (points - 1);
  GoodputModel m = model;
  std::size_t best = 0;
  for (int i = 0; i < points; ++i) {
    m.interval_s = low_s * std::exp(step * i);
    const HorizonEstimate h = estimate_horizon(m, horizon_s, trials, seed);  // the same trials for every interval
    s.points.push_back({m.interval_s, h.goodput.mean});
    if (s.points.back().goodput > s.points[best].goodput) best = s.points.size() - 1;
  }
  s.best_interval_s = s.points[best].interval_s;
  s.best_goodput = s.points[best].goodput;
  // The optimum is flat: the vertex of the parabola through the best point and its neighbours (in
  // log interval, where the goodput curve is near-symmetric) beats the grid's resolution.
  if (best > 0 && best + 1 < s.points.size()) {
    const double g0 = s.points[best - 1].goodput, g1 = s.points[best].goodput, g2 = s.points[best + 1].goodput;
    const double curvature = g0 - 2 * g1 + g2;
    if (curvature < 0) {
      const double offset = 0.5 * (g0 - g2) / curvature;  // in grid steps, within (-1, 1)
      s.best_interval_s = std::exp(std::log(s.points[best].interval_s) + offset * step);
    }
  }
  return s;
}

}  // namespace tandem::sim::reliability
