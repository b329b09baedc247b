// The cost of passing a core from one thread to another, as the CPU backend does whenever a rank
// blocks (core_gate.hpp): two threads take turns through a condition variable, as a rank and the
// rank it hands its core to do. Pinned to one core, each turn is a context switch on that core;
// pinned to two, each turn wakes a thread whose core idles (halted: on a VM resuming a virtual CPU
// takes an exit and an interrupt). Measured here: ~3 us and ~27 us (2-core KVM guest, AMD EPYC).
#pragma once

#include "common/units.hpp"

namespace tandem::exec::cpu {

// Median over a few rounds of the time per turn. `same_core` false on a single-CPU process
// measures the same core.
Seconds measure_thread_handoff_s(bool same_core);

}  // namespace tandem::exec::cpu
