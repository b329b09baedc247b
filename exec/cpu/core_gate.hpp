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
// Waits spin briefly before they block only while no thread that needs a core is queued for
// one (spin_while_cores_idle, CoreGate::wanted): a rank, or a standby worker whose host is not
// running (it waits, spinning or blocked) or has not taken the op itself within 20 us:
// otherwise spinning would keep a core from it. Such a
// worker's op is often what the spinner waits for (pipeline ranks each blocked on a message
// while a worker holds the activation or gradient the other needs: the hosts' 100 us spins
// delayed every pipeline hand-off by that much). For that, a worker is queued only while it
// has an op nobody runs: its host withdraws it when it runs the op itself.
#pragma once

#include <atomic>
#include <chrono>
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
  // A spinning wait would keep a core from a queued thread that needs one: a queued rank, or a
  // queued standby worker whose host is not running (blocked or spinning itself), so that
  // nobody else runs its op, or whose running host has not taken its op within
  // kHostPickupGrace (a message it sent, which it does not wait for). A host about to wait for
  // its op (a tensor-parallel all-reduce) runs it itself within microseconds: meanwhile its
  // worker does not count.
  bool wanted() const;
  static constexpr std::chrono::microseconds kHostPickupGrace{20};
  // Whether `rank`'s host thread holds a core and works (does not wait).
  void set_host_running(int rank, bool running);
  // More ranks than permits: ranks take turns, and a waiting thread never spins (see below).
  bool oversubscribed() const { return hosts_.load(std::memory_order_relaxed) > permits_; }

  // This thread (one of `rank`'s) holds a permit of `gate` from construction to destruction.
  class Hold {
   public:
    Hold(CoreGate& gate, int rank);
    ~Hold();
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;
  };

  // A thread waiting for a permit.
  // It sleeps on `granted` (a futex): its granter wakes it without the gate's lock, so a woken
  // thread never blocks again on that lock while a thread on another core holds it (each such
  // block left its core idle, and resuming an idle virtual CPU costs ~20 us here).
  struct Waiter {
    std::atomic<std::uint32_t> granted{0};
    int core = -1;
    long tid = 0;  // the waiting thread, to pin it before it is woken
    int rank = -1;
    int pinned = -1;  // its current core
    std::chrono::steady_clock::time_point queued_at;  // when it was queued
    CoreGate* gate = nullptr;  // the gate it sleeps off (prepare_sleep)
  };
  // Queues `waiter` for a permit, granting a free one at once (no thread queued before it); the
  // thread itself or another one on its behalf (see prepare_sleep).
  void enqueue(Waiter& waiter, bool standby);
  // Blocks until `waiter` is granted a permit; its core.
  int await(Waiter& waiter);
  // The same, until `deadline`: false when it was not granted by then.
  bool await_until(Waiter& waiter, std::chrono::steady_clock::time_point deadline);
  // Takes `waiter` out of the queue again (its waker found it no work after all), so that a
  // queued thread always has work for a core (spinning waits give way to it). False when it was
  // granted a permit already.
  bool withdraw(Waiter& waiter);

 private:
  int permits_;
  mutable std::mutex mutex_;
  std::vector<int> free_;  // cores of the free permits (-1 each when not pinning)
  std::deque<Waiter*> queue_, standby_;
  std::atomic<int> queued_{0};  // queue_.size() + standby_.size(), read by spinning threads
  std::atomic<int> regular_queued_{0};  // queue_.size()
  std::vector<char> host_running_;  // by rank, under mutex_
  std::atomic<int> hosts_{0};       // rank (host) threads holding a Hold

  // Gives `waiter` `core` (under mutex_); wake() it after unlocking.
  void grant(Waiter& waiter, int core);
  static void wake(Waiter& waiter);
};

// The calling thread's gate: gives its permit back (true when it held one), preferably to a
// thread of a rank that `wanted` accepts (the ranks this thread waits for).
// Never while holding a lock another thread may need: the thread handed the core wakes on this
// one's CPU and may preempt it at once, and a preempted thread gets its CPU back only when the
// kernel gives it a time slice, after whole turns of other ranks (a stream worker that left its
// core under its device's lock stalled its host, which held the other core, for ~300 us).
bool leave_core(const RankFilter& wanted = {});
// A thread is queued for a core that this thread's spinning would keep from it
// (CoreGate::wanted), ranks outnumber cores (CoreGate::oversubscribed), or this thread holds none.
bool cores_wanted();
// This thread is a rank's stream worker, not its host (see CoreGate::wanted).
void mark_stream_worker();
// This thread, when a rank's host, waits (spins) or works again (see CoreGate::wanted).
void note_host_waiting(bool waiting);
void cpu_relax();
// Takes a permit again after leave_core() returned true.
void rejoin_core(bool standby = false);

// Sleeping off the core until another thread queues the sleeper for one. A thread woken by a
// condition variable while every core is busy runs at once anyway, briefly, to queue for a core:
// it preempts a running thread (a context switch each way), and until it has run, glibc makes the
// next notify of that condition variable wait for it (a notifier blocked for a whole turn of the
// core). A sleeper is therefore never notified to queue itself: its waker queues it
// (CoreGate::enqueue with the sleeper's Waiter), and it wakes only once it holds a permit, on the
// core its releaser leaves.
// prepare_sleep() fills `waiter` for this thread; leave_core() then gives the permit back, and
// await_core() blocks until a waker has queued `waiter` and it was granted (the thread joined a
// gate with a Hold).
void prepare_sleep(CoreGate::Waiter& waiter);
void await_core(CoreGate::Waiter& waiter);
// await_core() until `deadline`: false when no core was granted by then (the sleeper still has
// none: withdraw it if it was queued, then rejoin_core()).
bool await_core_until(CoreGate::Waiter& waiter, std::chrono::steady_clock::time_point deadline);
// Another thread queues a sleeper (prepared by prepare_sleep) for a core on its gate.
void queue_sleeper(CoreGate::Waiter& waiter);
// This thread holds a core permit (its waits can sleep off the core).
bool holds_core();

// A thread asleep off its core in a wait whose wakers queue it for one (above), once. Its
// fields are read and written under the lock of the state its wakers watch.
struct CoreSleeper {
  CoreGate::Waiter waiter;  // filled by prepare_sleep() before the sleeper is findable
  bool queued = false;      // a waker has queued it
  // The waker's part: queues it for a core unless a waker did already.
  void queue() {
    if (queued) return;
    queued = true;
    queue_sleeper(waiter);
  }
};

// The whole sleep of a thread that holds a core, for a wait whose wakers queue it: the caller
// has prepared `sleeper` and made it findable by its wakers under `lock`; this releases `lock`,
// gives the core up (preferably to a thread of a rank `wanted` accepts) and sleeps until granted
// or `deadline`. `unregister` (under `lock`) then makes the sleeper unfindable again, before the
// thread queues for a core itself, if it must (time was up and no waker had queued it): a waker
// must never queue a waiter its thread no longer waits on. Returns holding a core; true when a
// waker's grant woke it.
template <class Lock, class Unregister>
bool sleep_off_core_until(Lock& lock, CoreSleeper& sleeper, std::chrono::steady_clock::time_point deadline,
                          const RankFilter& wanted, Unregister unregister) {
  CoreGate::Waiter& waiter = sleeper.waiter;
  lock.unlock();
  leave_core(wanted);
  bool granted = await_core_until(waiter, deadline);
  lock.lock();
  // Time is up. Queued meanwhile: withdrawn, or granted after all (then it holds a core).
  if (!granted && sleeper.queued && !waiter.gate->withdraw(waiter)) {
    lock.unlock();
    await_core(waiter);
    lock.lock();
    granted = true;
  }
  unregister();
  if (!granted) {
    lock.unlock();
    rejoin_core();
    lock.lock();
  }
  return granted;
}

// Spins (re-checking `ready` under `lock`, released between checks) for up to `budget` while
// no thread that wants it is queued for a core (cores_wanted): a core that
// would idle anyway keeps its thread, which then sees the condition within a microsecond
// instead of being woken (tens of microseconds on a VM whose idle virtual CPU halted). True
// when `ready` holds.
//
// With more ranks than cores (CoreGate::oversubscribed) waits never spin: some rank is nearly
// always queued or about to be, and a spinner stalls it. Measured on the 2-core VM, 4 ranks,
// iteration mean over 100: hybrid tp2 x pp2 8.0 ms spinning 100 us, 6.8 ms not; dp2 x tp2
// 7.4-8.2 vs 6.4-6.6. With 2 ranks spinning pays (tensor tp=2: 4.8 vs 6.4 ms): waking a thread
// on an idle virtual CPU costs ~27 us here, a hand-off on one core ~3 us.
template <class Lock, class Ready>
bool spin_while_cores_idle(Lock& lock, Ready ready, std::chrono::microseconds budget);

// Runs `wait()` (a blocking wait on a condition variable with `lock`) off the core: the permit
// goes back first and is taken again after, with `lock` released meanwhile.
template <class Lock, class Wait>
auto off_core_wait(Lock& lock, Wait wait, const RankFilter& wanted = {}, bool standby = false) {
  lock.unlock();  // before the core goes: see leave_core
  const bool gave = leave_core(wanted);
  lock.lock();
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
  if (ready()) return true;
  if (cores_wanted()) return false;
  const auto until = std::chrono::steady_clock::now() + budget;
  note_host_waiting(true);
  bool done = false;
  while (!(done = ready())) {
    if (cores_wanted() || std::chrono::steady_clock::now() >= until) break;
    lock.unlock();
    for (int i = 0; i < 64; ++i) cpu_relax();
    lock.lock();
  }
  note_host_waiting(false);
  return done;
}

}  // namespace tandem::exec::cpu
