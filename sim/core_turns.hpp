// Ranks that are threads on one machine take turns on its cores: the CPU backend runs at most one
// rank per core (exec/cpu/core_gate.hpp), each until it blocks, and hands the core to the next
// rank queued for one. This is that policy on the simulated machine, so that more ranks than
// cores (4 ranks on 2 cores) are predicted as they really run, not as an ideal processor share
// where every rank progresses at cores/ranks speed and partners always meet at once.
//
// A machine gets turns only when its ranks outnumber its cores (with at most as many ranks as
// cores nobody ever queues, and a waiting rank keeps its core: the backend spins, then sleeps on
// a core nobody else wants). The rules mirror the backend's:
//   * a rank computes only while it holds a core; it takes one first come, first served;
//   * a rank that waits (for a collective, a message, a stream) gives its core up at once (the
//     backend never spins then), first to a queued rank it waits for, else to the first queued
//     rank, else the core idles; but not when every other member has arrived (the wait is the
//     data moving, which the backend's last member does on its core: SimDevice::wait_off_core);
//   * a rank whose wait is over queues for a core again; it pays the machine's costs of getting
//     one (DeviceProfile): a core handed over by a rank that blocks costs a context switch on
//     that core (core_handoff_s, core time); a core that idled must first be woken (core_wake_s,
//     a delay: a halted virtual CPU takes an interrupt to resume).
#pragma once

#include <simgrid/s4u.hpp>

#include <deque>
#include <functional>
#include <vector>

namespace tandem::sim {

class CoreTurns {
 public:
  using Awaited = std::function<bool(int rank)>;
  // How a rank got its core.
  enum class Grant { kept, woken, handed };

  // `cores` shared by ranks (global ranks 0..world-1 index the state) that outnumber them.
  CoreTurns(int cores, int world);

  // Blocks the calling rank until it holds a core.
  Grant acquire(int rank);
  // The rank waits: its core goes to a queued rank, first one that `awaited` accepts.
  void give_up(int rank, const Awaited& awaited);
  // The rank is done for good.
  void leave(int rank);

 private:
  enum class State { idle, queued, running };
  // A core given up: to the first queued rank `preferred` accepts, else the first, else idle.
  void pass_core(const Awaited& preferred);

  int free_;
  std::vector<State> state_;
  std::vector<Grant> grant_;  // how a queued rank was granted its core
  std::deque<int> queue_;
  simgrid::s4u::ConditionVariablePtr granted_ = simgrid::s4u::ConditionVariable::create();
  simgrid::s4u::MutexPtr mutex_ = simgrid::s4u::Mutex::create();
};

}  // namespace tandem::sim
