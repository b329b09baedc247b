// Spin-then-block waiting for the CPU backend's hand-offs between threads (a rank's host and its
// stream workers, the members of a collective, a send and its receive).
//
// Why spin at all: a thread that blocks on a futex gives its core away; when it is woken, it
// needs a core again, and when every core is busy (other ranks, other programs) it waits for the
// running thread's time slice to end: up to a scheduler tick (4 ms here) for a hand-off whose
// work takes microseconds. Most hand-offs in a step are short (the peer is a few microseconds
// away from arriving or finishing its share), so the waiter first spins for kSpinBudget on a
// counter that the other side bumps, keeping its core, and only then blocks. The budget bounds
// what a long wait costs the other threads of the machine.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>
#include <cstdlib>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace tandem::exec::cpu {

inline const std::chrono::microseconds kSpinBudget{std::getenv("TANDEM_SPIN") ? std::atoi(std::getenv("TANDEM_SPIN")) : 100};
inline constexpr std::chrono::microseconds kPauseSpin{20};

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Spins until `counter` differs from `seen`, `stop()` holds or `deadline` (a wait's spin budget:
// start + kSpinBudget) passes. Returns true when the counter moved (re-check the condition).
template <class Stop>
bool spin_while_unchanged(const std::atomic<std::uint64_t>& counter, std::uint64_t seen,
                          std::chrono::steady_clock::time_point deadline, Stop stop) {
  const auto yield_after = std::chrono::steady_clock::now() + kPauseSpin;
  while (true) {
    for (int i = 0; i < 64; ++i) {
      if (counter.load(std::memory_order_acquire) != seen) return true;
      cpu_relax();
    }
    const auto now = std::chrono::steady_clock::now();
    if (stop() || now >= deadline) return false;
    if (now >= yield_after) std::this_thread::yield();
  }
}

}  // namespace tandem::exec::cpu
