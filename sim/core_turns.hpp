// Ranks that are threads on one machine take turns on its cores: the CPU backend runs at most one
// rank per core (exec/cpu/core_gate.hpp), each until it blocks, and hands the core to the next
// rank queued for one. This is that policy on the simulated machine, so that more ranks than
// cores (4 ranks on 2 cores) are predicted as they really run, not as an ideal processor share
// where every rank progresses at cores/ranks speed and partners always meet at once.
//
// The rules mirror the backend's:
//   * a rank computes only while it holds a core; it takes one first come, first served;
//   * a rank that waits (for a collective, a message, a stream) keeps its core while nobody is
//     queued for one (it spins: the core would idle anyway), and gives it up as soon as somebody
//     queues, unless every rank it waits for is running on another core (a gang spin: a
//     tensor-parallel partner that runs arrives within microseconds);
//   * a core given up goes first to a queued rank that the giver waits for, else to the first
//     queued rank;
//   * every time a core passes from one rank to another, the receiving rank pays the machine's
//     hand-off (a context switch and a wake-up on its core: DeviceProfile::core_handoff_s).
// With at most as many ranks as cores nobody ever queues, and this changes nothing.
#pragma once

#include <simgrid/s4u.hpp>

#include <deque>
#include <functional>
#include <vector>

#include "common/units.hpp"

namespace tandem::sim {

class CoreTurns {
 public:
  using Awaited = std::function<bool(int rank)>;
  CoreTurns(int cores, int ranks);

  // Blocks the calling rank until it holds a core (at once when it still holds one); true when
  // the core came from another rank (the caller pays the hand-off).
  bool acquire(int rank);
  // The rank waits for the ranks `awaited` accepts: it keeps its core until somebody needs it
  // (see the header).
  void start_waiting(int rank, Awaited awaited);
  // The wait is over: true when the rank still holds its core.
  bool stop_waiting(int rank);
  // The rank is done for good.
  void leave(int rank);

 private:
  enum class State { idle, queued, running, waiting };
  bool running(int rank) const { return state_[rank] == State::running; }
  bool gang_spinning(int rank) const;  // waiting, every awaited rank running
  void grant(int rank);
  void reschedule();  // hands free or yieldable cores to queued ranks

  int free_;
  std::vector<State> state_;
  std::vector<Awaited> awaited_;
  std::deque<int> queue_;
  simgrid::s4u::ConditionVariablePtr granted_ = simgrid::s4u::ConditionVariable::create();
  simgrid::s4u::MutexPtr mutex_ = simgrid::s4u::Mutex::create();
};

}  // namespace tandem::sim
