// At most as many running threads as cores: the CPU backend's ranks and stream workers take a
// core permit from the run's CoreGate to run, and give it back whenever they block.
//
// Why: a thread woken while every core is busy waits until the running thread's time slice ends
// (a scheduler tick, ~4 ms here) before it runs; with 4 ranks (plus their stream workers) on 2
// cores nearly every hand-off of a collective hit that wait, and the step took far longer than
// its work. With the gate, the threads that hold no permit are blocked, not runnable: a thread
// that blocks (a collective waiting for a member, a wait for an op) hands its permit to the
// first thread queued for one (FIFO) and, once it is off its core, that core is idle, so the
// next thread gets it at once. Ranks beyond the cores thus run in turns, each until it blocks,
// instead of in time slices that end at arbitrary points (e.g. in the middle of a collective
// that the other ranks wait for).
//
// A permit is a core: its holder is pinned to that core (sched_setaffinity), and a thread handed
// a permit is pinned to it BEFORE it is woken, so it wakes on the core that its releaser is about
// to leave, and runs there as soon as the releaser blocks. Without pinning Linux may queue it on
// a core where another permit holder runs (and not pull it to the idle core soon after: a thread
// that ran recently counts as cache-hot), and it waits for that holder's tick.
//
// Stream workers. A rank's stream worker (cpu_device.hpp) that has an op to run takes a core
// only as a standby: when no rank is queued for one, i.e. when the core would otherwise idle
// (its host, or another rank, blocked waiting). Its host runs the ops it waits for itself;
// a worker queued like a rank would take cores from ranks and trade ops with its host, each
// trade a context switch. A standby worker still takes the core of a rank blocked waiting for
// its op (a pipeline send), so it never waits for its host to block.
//
// Gangs. Ranks that work together (a tensor-parallel pair, a pipeline's neighbours) must run at
// the same time: a thread that blocks waiting for particular ranks (the members of a collective
// that have not arrived, a message's peer) names them, and its permit goes to the first queued
// thread of those ranks, before first-come order. Otherwise, with 4 ranks on 2 cores, a
// tensor-parallel rank would often hand its core to a rank of the other pair and wait a whole
// turn for its partner.
//
// Threads join the gate with a Hold (for the thread's lifetime). Every blocking wait of the
// backend goes through off_core_wait(), which gives the permit back for the wait (when the
// thread holds one: other threads, e.g. the calibration's, are not gated) and takes it again
// after, WITHOUT the wait's mutex, so that a thread queued for a permit never holds a lock
// that a running thread needs. It takes the permit again only once its wait is over: a thread
// that is woken to re-check its condition and goes back to sleep would otherwise queue for a
// core, and take one, for nothing.
// Waits spin briefly before they block only while no rank is queued for a core
// (spin_while_cores_idle): otherwise spinning would keep a core from a queued rank.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <vector>

namespace tandem::exec::cpu {

using RankFilter = std::function<bool(int rank)>;

class CoreGate {
 public:
  // `permits` cores of this process's CPU set (more permits than cores: no pinning).
  explicit CoreGate(int permits);
  CoreGate(const CoreGate&) = delete;
  CoreGate& operator=(const CoreGate&) = delete;

  int permits() const { return permits_; }
  // Blocks until a permit is free (first come, first served); its core (-1: none). A standby
  // thread gets a permit only when no other thread is queued: one that would otherwise be idle.
  int acquire(bool standby = false);
  // Hands the permit to the first queued thread of a rank that `wanted` accepts, else to the
  // first queued thread, if any.
  void release(int core, const RankFilter& wanted = {});
  int queued() const;  // threads waiting for a permit
  bool regular_queued() const { return regular_queued_.load(std::memory_order_relaxed) > 0; }

  // This thread (one of `rank`'s) holds a permit of `gate` from construction to destruction.
  class Hold {
   public:
    Hold(CoreGate& gate, int rank);
    ~Hold();
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;
  };

 private:
  struct Waiter {
    std::condition_variable cv;
    bool granted = false;
    int core = -1;
    long tid = 0;  // the waiting thread, to pin it before it is woken
    int rank = -1;
    int pinned = -1;  // its current core
  };
  int permits_;
  mutable std::mutex mutex_;
  std::vector<int> free_;  // cores of the free permits (-1 each when not pinning)
  std::deque<Waiter*> queue_, standby_;
  std::atomic<int> regular_queued_{0};  // queue_.size(), read by spinning threads
};

// The calling thread's gate: gives its permit back (true when it held one), preferably to a
// thread of a rank that `wanted` accepts (the ranks this thread waits for).
bool leave_core(const RankFilter& wanted = {});
// A thread (not a standby one) is queued for a core of this thread's gate, or it holds none.
bool cores_wanted();
void cpu_relax();
// Takes a permit again after leave_core() returned true.
void rejoin_core(bool standby = false);

// Spins (re-checking `ready` under `lock`, released between checks) for up to `budget` while
// no thread is queued for a core of this thread's gate (a standby one aside): a core that
// would idle anyway keeps its thread, which then sees the condition within a microsecond
// instead of being woken (tens of microseconds on a VM whose idle virtual CPU halted). True
// when `ready` holds.
template <class Lock, class Ready>
bool spin_while_cores_idle(Lock& lock, Ready ready, std::chrono::microseconds budget);

// Runs `wait()` (a blocking wait on a condition variable with `lock`) off the core: the permit
// goes back first and is taken again after, with `lock` released meanwhile.
template <class Lock, class Wait>
auto off_core_wait(Lock& lock, Wait wait, const RankFilter& wanted = {}, bool standby = false) {
  const bool gave = leave_core(wanted);
  auto result = wait();
  if (gave) {
    lock.unlock();
    rejoin_core(standby);
    lock.lock();
  }
  return result;
}

template <class Lock, class Ready>
bool spin_while_cores_idle(Lock& lock, Ready ready, std::chrono::microseconds budget) {
  const auto until = std::chrono::steady_clock::now() + budget;
  while (!ready()) {
    if (cores_wanted() || std::chrono::steady_clock::now() >= until) return false;
    lock.unlock();
    for (int i = 0; i < 64; ++i) cpu_relax();
    lock.lock();
  }
  return true;
}

}  // namespace tandem::exec::cpu
