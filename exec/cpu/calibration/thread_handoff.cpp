#include "exec/cpu/calibration/thread_handoff.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <thread>
#include <vector>

#include "exec/cpu/core_gate.hpp"

namespace tandem::exec::cpu {

namespace {

constexpr int kPasses = 2000;  // per round: ~40 ms on a busy machine
constexpr int kRounds = 5;

// One thread of a round: it sleeps off its core until another queues it for one (as a rank asleep
// in a collective is woken by the member that arrives last). `asleep` is set before it leaves its
// core when every core is taken (nobody can queue it before it is off), after otherwise (else a
// thread on another core could queue it while it still holds its own: no hand-off at all).
struct Sleeper {
  CoreGate::Waiter waiter;
  std::atomic<bool> asleep{false};

  void sleep(bool cores_all_taken) {
    prepare_sleep(waiter);
    if (cores_all_taken) asleep.store(true);
    leave_core();
    if (!cores_all_taken) asleep.store(true);
    await_core(waiter);
  }
  // Waits until it sleeps, then queues it for a core.
  void wake() {
    while (!asleep.load()) std::this_thread::yield();
    asleep.store(false);
    queue_sleeper(waiter);
  }
};

Seconds seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Every core busy: twice as many threads as cores, in rings of two (thread i wakes thread i + P,
// which wakes thread i): each turn a thread queues its partner, then sleeps and hands its core to
// the first queued thread, which may have last run on another core (it is pinned to its new one
// first, as ranks are). Seconds per turn and core.
Seconds busy_round(int cores) {
  const int threads = 2 * cores;
  CoreGate gate(cores);
  std::deque<Sleeper> sleepers(threads);
  std::atomic<int> joined{0}, ready{0}, turns{0};
  std::vector<std::atomic<bool>> done(threads);
  const auto player = [&](int rank) {
    const CoreGate::Hold hold(gate, rank);
    const int me = joined.fetch_add(1);  // by the order threads got cores: the first P hold them
    const int partner = (me + cores) % threads;
    if (me < cores) {  // once the others all queue, the core holders sleep first
      while (gate.queued() < threads - cores) std::this_thread::yield();
      ready.fetch_add(1);
      while (ready.load() < cores) std::this_thread::yield();
      sleepers[me].sleep(/*cores_all_taken=*/true);
    }
    for (;;) {
      const bool last = turns.load() >= kPasses;
      if (last) done[me].store(true);
      if (last && done[partner].load()) break;  // the partner left already
      sleepers[partner].wake();
      if (last) break;
      turns.fetch_add(1);
      sleepers[me].sleep(/*cores_all_taken=*/true);
    }
  };
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> team;
  for (int rank = 0; rank < threads; ++rank) team.emplace_back(player, rank);
  for (std::thread& t : team) t.join();
  return seconds_since(start) * cores / kPasses;
}

// Two threads, two cores: each turn wakes a thread onto the core that has idled since it left it.
// Seconds per turn.
Seconds idle_round() {
  CoreGate gate(2);
  Sleeper sleepers[2];
  std::atomic<int> passes{0}, holders{0};
  const auto player = [&](int me) {
    const CoreGate::Hold hold(gate, me);
    if (holders.fetch_add(1) != 0) sleepers[me].sleep(/*cores_all_taken=*/false);  // the second sleeps first
    // Counted before the wake-up: the other, once woken, must see whether this was the last turn
    // (else it could wait for this thread to sleep, which it never does again).
    while (passes.load() < kPasses) {
      const bool last = passes.fetch_add(1) + 1 >= kPasses;
      sleepers[1 - me].wake();
      if (last) break;
      sleepers[me].sleep(/*cores_all_taken=*/false);
    }
  };
  const auto start = std::chrono::steady_clock::now();
  std::thread a(player, 0), b(player, 1);
  a.join();
  b.join();
  return seconds_since(start) / kPasses;
}

template <class Round>
Seconds median_round(Round round) {
  std::vector<Seconds> rounds;
  for (int r = 0; r < kRounds; ++r) rounds.push_back(round());
  std::sort(rounds.begin(), rounds.end());
  return rounds[rounds.size() / 2];
}

}  // namespace

Seconds measure_busy_handoff_s(int cores) {
  return median_round([cores] { return busy_round(std::max(1, cores)); });
}

Seconds measure_idle_wake_s() { return median_round(idle_round); }

}  // namespace tandem::exec::cpu
