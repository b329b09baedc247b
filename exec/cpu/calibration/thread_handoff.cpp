#include "exec/cpu/calibration/thread_handoff.hpp"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace tandem::exec::cpu {

namespace {

constexpr int kTurns = 1000;  // per round: ~30 ms across cores, ~3 ms on one
constexpr int kRounds = 5;

// The first two CPUs this process may run on (one when it has a single CPU).
std::vector<int> two_cpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0)
    for (int c = 0; c < CPU_SETSIZE && cpus.size() < 2; ++c)
      if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

void pin_self(int cpu) {
  if (cpu < 0) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  ::sched_setaffinity(0, sizeof set, &set);
}

// Two threads pass the turn back and forth kTurns times; seconds per pass.
Seconds one_round(int cpu_a, int cpu_b) {
  std::mutex mutex;
  std::condition_variable turn_changed[2];
  int turn = 0;
  const auto player = [&](int me, int cpu) {
    pin_self(cpu);
    for (int i = 0; i < kTurns; ++i) {
      std::unique_lock<std::mutex> lock(mutex);
      turn_changed[me].wait(lock, [&] { return turn == me; });
      turn = 1 - me;
      turn_changed[1 - me].notify_one();
    }
  };
  const auto start = std::chrono::steady_clock::now();
  std::thread a(player, 0, cpu_a), b(player, 1, cpu_b);
  a.join();
  b.join();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / (2.0 * kTurns);
}

}  // namespace

Seconds measure_thread_handoff_s(bool same_core) {
  const std::vector<int> cpus = two_cpus();
  const int a = cpus.empty() ? -1 : cpus[0];
  const int b = same_core || cpus.size() < 2 ? a : cpus[1];
  std::vector<Seconds> rounds;
  for (int r = 0; r < kRounds; ++r) rounds.push_back(one_round(a, b));
  std::sort(rounds.begin(), rounds.end());
  return rounds[rounds.size() / 2];
}

}  // namespace tandem::exec::cpu
