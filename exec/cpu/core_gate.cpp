#include "exec/cpu/core_gate.hpp"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>

namespace tandem::exec::cpu {

namespace {
// The gate this thread holds a permit of, and the permit's core while it holds it.
thread_local CoreGate* tl_gate = nullptr;
thread_local bool tl_holding = false;
thread_local int tl_core = -1;
thread_local int tl_rank = -1;
thread_local int tl_pinned = -1;  // the core this thread is pinned to (-1: none yet)
thread_local bool tl_worker = false;  // a rank's stream worker (not its host)

// This thread, when a rank's host, works (holds a core and does not wait) or not.
void note_host(bool running) {
  if (tl_gate != nullptr && !tl_worker) tl_gate->set_host_running(tl_rank, running);
}

// This thread was granted `core` (a permit of tl_gate).
void now_holding(int core) {
  tl_core = core;
  tl_holding = true;
  note_host(true);
}

long this_tid() { return static_cast<long>(::syscall(SYS_gettid)); }

// Pins thread `tid` (0: the caller) to `core` (nothing when core < 0). Failure is harmless: the
// thread runs unpinned.
void pin(long tid, int core) {
  if (core < 0) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(core, &set);
  ::sched_setaffinity(static_cast<pid_t>(tid), sizeof set, &set);
}

// The futex behind a Waiter's `granted` word.
static_assert(sizeof(std::atomic<std::uint32_t>) == sizeof(std::uint32_t) &&
              std::atomic<std::uint32_t>::is_always_lock_free);
std::uint32_t* futex_word(std::atomic<std::uint32_t>& word) { return reinterpret_cast<std::uint32_t*>(&word); }

// Sleeps while `word` is 0, for at most `timeout` (nullptr: no limit); returns on a wake-up, a
// signal or the timeout alike (callers re-check).
void futex_sleep(std::atomic<std::uint32_t>& word, const timespec* timeout) {
  ::syscall(SYS_futex, futex_word(word), FUTEX_WAIT_PRIVATE, 0u, timeout, nullptr, 0);
}

// This process's CPUs (its affinity mask as the first gate found it: later, threads are pinned).
const std::vector<int>& process_cpus() {
  static const std::vector<int> cpus = [] {
    std::vector<int> out;
    cpu_set_t set;
    CPU_ZERO(&set);
    if (::sched_getaffinity(0, sizeof set, &set) == 0)
      for (int c = 0; c < CPU_SETSIZE; ++c)
        if (CPU_ISSET(c, &set)) out.push_back(c);
    return out;
  }();
  return cpus;
}
}  // namespace

CoreGate::CoreGate(int permits) : permits_(std::max(1, permits)) {
  const std::vector<int>& cpus = process_cpus();
  const bool pinning = permits_ <= static_cast<int>(cpus.size());
  for (int i = 0; i < permits_; ++i) free_.push_back(pinning ? cpus[static_cast<std::size_t>(i)] : -1);
}

int CoreGate::acquire(bool standby) {
  Waiter me;
  me.tid = this_tid();
  me.rank = tl_rank;
  me.pinned = tl_pinned;
  enqueue(me, standby);
  return await(me);
}

void CoreGate::grant(Waiter& waiter, int core) {
  // Pinned before the wake-up: it wakes on the core its granter leaves (or the free one).
  if (core != waiter.pinned) pin(waiter.tid, core);
  waiter.core = core;
  waiter.granted.store(1, std::memory_order_release);
}

// After the gate's lock is released. `waiter` may have seen its grant and returned already (its
// storage then belongs to a later wait of the same thread, which re-checks after any wake-up):
// a futex wake on it is then at worst spurious.
void CoreGate::wake(Waiter& waiter) {
  ::syscall(SYS_futex, futex_word(waiter.granted), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
}

void CoreGate::enqueue(Waiter& waiter, bool standby) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    waiter.granted.store(0, std::memory_order_relaxed);
    if (free_.empty() || !queue_.empty() || !standby_.empty()) {
      waiter.queued_at = std::chrono::steady_clock::now();
      (standby ? standby_ : queue_).push_back(&waiter);
      queued_.fetch_add(1, std::memory_order_relaxed);
      if (!standby) regular_queued_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    // The core it ran on last when that one is free: no migration, no affinity call.
    auto it = std::find(free_.begin(), free_.end(), waiter.pinned);
    if (it == free_.end()) it = free_.end() - 1;
    const int core = *it;
    free_.erase(it);
    grant(waiter, core);
  }
  wake(waiter);
}

int CoreGate::await(Waiter& waiter) {
  while (waiter.granted.load(std::memory_order_acquire) == 0) futex_sleep(waiter.granted, nullptr);
  tl_pinned = waiter.core;  // pinned by whoever granted it
  return waiter.core;
}

bool CoreGate::await_until(Waiter& waiter, std::chrono::steady_clock::time_point deadline) {
  while (waiter.granted.load(std::memory_order_acquire) == 0) {
    const auto left = deadline - std::chrono::steady_clock::now();
    if (left <= std::chrono::steady_clock::duration::zero()) return false;
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
    const timespec timeout{static_cast<time_t>(ns / 1'000'000'000), static_cast<long>(ns % 1'000'000'000)};
    futex_sleep(waiter.granted, &timeout);
  }
  tl_pinned = waiter.core;
  return true;
}

bool CoreGate::withdraw(Waiter& waiter) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (std::deque<Waiter*>* from : {&queue_, &standby_}) {
    auto it = std::find(from->begin(), from->end(), &waiter);
    if (it == from->end()) continue;
    from->erase(it);
    queued_.fetch_sub(1, std::memory_order_relaxed);
    if (from == &queue_) regular_queued_.fetch_sub(1, std::memory_order_relaxed);
    return true;
  }
  return false;
}

void CoreGate::release(int core, const RankFilter& wanted) {
  std::unique_lock<std::mutex> lock(mutex_);
  std::deque<Waiter*>& from = !queue_.empty() ? queue_ : standby_;
  if (from.empty()) {
    free_.push_back(core);
    return;
  }
  auto it = from.begin();
  if (wanted) {
    auto found = std::find_if(from.begin(), from.end(), [&](const Waiter* w) { return wanted(w->rank); });
    if (found != from.end()) it = found;
  }
  Waiter* next = *it;
  from.erase(it);
  queued_.fetch_sub(1, std::memory_order_relaxed);
  if (&from == &queue_) regular_queued_.fetch_sub(1, std::memory_order_relaxed);
  grant(*next, core);
  lock.unlock();
  wake(*next);
}

bool CoreGate::wanted() const {
  if (queued_.load(std::memory_order_relaxed) == 0) return false;  // the spinning fast path
  if (regular_queued_.load(std::memory_order_relaxed) > 0) return true;
  std::lock_guard<std::mutex> lock(mutex_);
  const auto now = std::chrono::steady_clock::now();
  return std::any_of(standby_.begin(), standby_.end(), [&](const Waiter* w) {
    return w->rank < 0 || w->rank >= static_cast<int>(host_running_.size()) || !host_running_[w->rank] ||
           now - w->queued_at > kHostPickupGrace;
  });
}

void CoreGate::set_host_running(int rank, bool running) {
  if (rank < 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (rank >= static_cast<int>(host_running_.size())) host_running_.resize(rank + 1, 0);
  host_running_[rank] = running;
}

int CoreGate::queued() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int>(queue_.size() + standby_.size());
}

CoreGate::Hold::Hold(CoreGate& gate, int rank) {
  if (!tl_worker) gate.hosts_.fetch_add(1, std::memory_order_relaxed);
  tl_rank = rank;
  const int core = gate.acquire();
  tl_gate = &gate;
  now_holding(core);
}

CoreGate::Hold::~Hold() {
  if (!tl_worker) tl_gate->hosts_.fetch_sub(1, std::memory_order_relaxed);
  note_host(false);
  if (tl_holding) tl_gate->release(tl_core);
  tl_gate = nullptr;
  tl_worker = false;
  tl_holding = false;
  tl_core = -1;
  tl_rank = -1;
}

bool leave_core(const RankFilter& wanted) {
  if (tl_gate == nullptr || !tl_holding) return false;
  tl_holding = false;
  note_host(false);
  tl_gate->release(tl_core, wanted);
  return true;
}

bool cores_wanted() { return tl_gate == nullptr || !tl_holding || tl_gate->oversubscribed() || tl_gate->wanted(); }

void mark_stream_worker() { tl_worker = true; }

void note_host_waiting(bool waiting) {
  if (tl_holding) note_host(!waiting);
}

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

void prepare_sleep(CoreGate::Waiter& waiter) {
  waiter.granted.store(0, std::memory_order_relaxed);
  waiter.core = -1;
  waiter.tid = this_tid();
  waiter.rank = tl_rank;
  waiter.pinned = tl_pinned;
  waiter.gate = tl_gate;
}

void await_core(CoreGate::Waiter& waiter) { now_holding(tl_gate->await(waiter)); }

bool await_core_until(CoreGate::Waiter& waiter, std::chrono::steady_clock::time_point deadline) {
  if (!tl_gate->await_until(waiter, deadline)) return false;
  now_holding(waiter.core);
  return true;
}

void queue_sleeper(CoreGate::Waiter& waiter) { waiter.gate->enqueue(waiter, /*standby=*/false); }

bool holds_core() { return tl_gate != nullptr && tl_holding; }

void rejoin_core(bool standby) {
  if (tl_gate == nullptr || tl_holding) return;
  now_holding(tl_gate->acquire(standby));
}

}  // namespace tandem::exec::cpu
