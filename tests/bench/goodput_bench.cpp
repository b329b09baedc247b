// The horizon Monte Carlo's speed (issue 15: 1,000 simulated days of a 4,096-GPU job well under
// a minute): one trial of 1,000 days, Llama 3's failure rates scaled to 4,096 H100 (512 nodes),
// restarts on spares, sync checkpoints every 30 min of training. Its reference, timed in the same
// iterations, is the floor any event-level Monte Carlo pays: drawing the trial's random numbers
// (two per failure) and nothing else. Counters:
//   failures            per trial (about 1,940: a failure every ~12 h)
//   trial_ms            one trial's wall time
//   vs_random_floor     the trial over drawing its random numbers
//   simulated_days_per_s
#include <benchmark/benchmark.h>

#include <chrono>

#include "platforms/failure_profile.hpp"
#include "sim/reliability/failure_streams.hpp"
#include "sim/reliability/goodput_model.hpp"
#include "sim/reliability/random_stream.hpp"

namespace {

using namespace tandem;
using namespace tandem::sim::reliability;

constexpr double kDay = 86400;

GoodputModel job_of_4096_gpus() {
  const FailureProfile profile = find_failure_profile("llama3-405b-h100");
  GoodputModel m;
  m.iteration_s = 8;
  m.tokens_per_iteration = 4e6;
  m.interval_s = 1800;
  m.checkpoint.blocking_s = 60;
  m.restart_s = 600;
  m.failures = failure_streams(profile, {4096, 512, 16, 32}, 1, 3 * kDay);
  m.policy = RecoveryPolicy::restart_on_spares;
  m.spare_nodes = 8;
  return m;
}

void BM_ThousandDaysOf4096Gpus(benchmark::State& state) {
  const GoodputModel m = job_of_4096_gpus();
  double trial_s = 0, floor_s = 0, failures = 0;
  std::uint64_t seed = 0;
  double sink = 0;
  for (auto _ : state) {
    auto start = std::chrono::steady_clock::now();
    const GoodputTally t = run_trial(m, 1000 * kDay, ++seed);
    trial_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    failures += t.failures;
    start = std::chrono::steady_clock::now();
    RandomStream rng(seed);
    for (int i = 0; i < t.failures; ++i) sink += rng.exponential(1.0) + rng.uniform_open();
    floor_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  benchmark::DoNotOptimize(sink);
  const double n = static_cast<double>(state.iterations());
  state.counters["failures"] = failures / n;
  state.counters["trial_ms"] = 1e3 * trial_s / n;
  state.counters["vs_random_floor"] = trial_s / floor_s;
  state.counters["simulated_days_per_s"] = 1000 * n / trial_s;
}
BENCHMARK(BM_ThousandDaysOf4096Gpus)->Unit(benchmark::kMillisecond);

// The same trial with a straggler that comes and goes every 6 h for 30 min on average (about
// 8,000 episode changes in 1,000 days, events beside the failures), against the trial without it
// timed in the same iterations: what episodes cost per event (goodput's episode budget rests on it).
void BM_ThousandDaysWithSlowdownEpisodes(benchmark::State& state) {
  const GoodputModel plain = job_of_4096_gpus();
  GoodputModel slowed = plain;
  slowed.slowdowns = {{"rank 7: compute x2.00", 1 / (6 * 3600.0), 1800, 0.55, 0.95, 0.97}};
  slowed.rebalance_after_s = 600;
  double with_s = 0, without_s = 0, slowed_share = 0;
  std::uint64_t seed = 0;
  for (auto _ : state) {
    ++seed;
    auto start = std::chrono::steady_clock::now();
    const GoodputTally a = run_trial(slowed, 1000 * kDay, seed);
    with_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    start = std::chrono::steady_clock::now();
    const GoodputTally b = run_trial(plain, 1000 * kDay, seed);
    without_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    slowed_share += a.slowed_s / a.duration_s;
    benchmark::DoNotOptimize(b.useful_s);
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["trial_ms"] = 1e3 * with_s / n;
  state.counters["vs_without_episodes"] = with_s / without_s;
  state.counters["slowed_share"] = slowed_share / n;
}
BENCHMARK(BM_ThousandDaysWithSlowdownEpisodes)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
