// The cost of passing a core from one rank's thread to another, as the CPU backend does whenever a
// rank blocks: two threads take turns through the backend's own gate (core_gate.hpp: the one that
// runs queues the sleeping other for a core, then sleeps itself). With one core, each turn is a
// context switch on it; with two, each turn wakes a thread onto a core that idled (halted: on a
// VM resuming a virtual CPU takes an exit and an interrupt). Measured here (2-core KVM guest, AMD
// EPYC): ~4.2 us and 16-24 us (a bare condition-variable ping-pong: ~3.3 us and 15-27 us).
#pragma once

#include "common/units.hpp"

namespace tandem::exec::cpu {

// Median over a few rounds of the time per turn. `same_core` false on a single-CPU process
// measures the same core.
Seconds measure_thread_handoff_s(bool same_core);

}  // namespace tandem::exec::cpu
