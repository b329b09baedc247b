#include "exec/cpu/calibration/thread_handoff.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "exec/cpu/core_gate.hpp"

namespace tandem::exec::cpu {

namespace {

constexpr int kPasses = 2000;  // per round: ~40 ms across cores, ~8 ms on one
constexpr int kRounds = 5;

// Two ranks' threads pass the turn through the backend's own gate (core_gate.hpp), as a
// collective's last member and a member asleep in it do: the one that runs queues the sleeping
// other for a core (prepare_sleep / queue_sleeper), then gives its own core up and sleeps until
// the other does the same. With one permit the sleeper gets the core its waker leaves (a context
// switch on one core); with two, the core that has idled since the sleeper left it (a wake-up).
// Seconds per pass.
Seconds one_round(int permits) {
  CoreGate gate(permits);
  CoreGate::Waiter waiters[2];
  std::atomic<bool> asleep[2] = {false, false};
  std::atomic<int> passes{0}, holders{0};
  const auto player = [&](int me) {
    const CoreGate::Hold hold(gate, me);
    const bool first = holders.fetch_add(1) == 0;  // whichever thread got a core first
    // Marked asleep before leaving a single core (the other cannot run before), after leaving one
    // of two (else the other could queue it while it still holds its core: no wake-up at all).
    const auto sleep = [&] {
      prepare_sleep(waiters[me]);
      if (permits == 1) asleep[me].store(true);
      leave_core();
      if (permits != 1) asleep[me].store(true);
      await_core(waiters[me]);
    };
    // One permit: the other thread waits in its Hold for this core, so the first sleeps first. Two
    // permits: the second got the other core; it sleeps first, leaving that core idle.
    if (first && permits == 1) {
      while (gate.queued() == 0) std::this_thread::yield();
      sleep();
    }
    if (!first && permits == 2) sleep();
    while (passes.load() < kPasses) {
      const int other = 1 - me;
      while (!asleep[other].load()) std::this_thread::yield();
      asleep[other].store(false);
      queue_sleeper(waiters[other]);
      if (passes.fetch_add(1) + 1 >= kPasses) break;
      sleep();
    }
  };
  const auto start = std::chrono::steady_clock::now();
  std::thread a(player, 0), b(player, 1);
  a.join();
  b.join();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / kPasses;
}

}  // namespace

Seconds measure_thread_handoff_s(bool same_core) {
  std::vector<Seconds> rounds;
  for (int r = 0; r < kRounds; ++r) rounds.push_back(one_round(same_core ? 1 : 2));
  std::sort(rounds.begin(), rounds.end());
  return rounds[rounds.size() / 2];
}

}  // namespace tandem::exec::cpu
