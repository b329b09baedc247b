// The cost of passing a core from one rank's thread to another, as the CPU backend does whenever a
// rank blocks and ranks outnumber the cores (core_gate.hpp: the thread that makes a sleeper ready
// queues it for a core; the thread that blocks hands its core to the first queued thread).
// Measured with the backend's own gate, in the two situations the simulator distinguishes
// (sim/core_turns.hpp):
// - handed over while every core is busy: twice as many threads as cores, each waking its partner
//   and sleeping, as ranks do in turns; a ping-pong on one core while the others idle missed
//   what the busy cores cost (below). Measured here (2-core KVM guest, AMD EPYC): 3-6 us.
// - resumed on an idle core (two threads, two cores): ~15-24 us (a halted virtual CPU resumes).
// The busy measurement found the gate's own cost: while its sleepers slept on a condition
// variable, a woken thread re-took the gate's lock, which the other core's thread often held: it
// blocked again, its core idled, and resuming it took ~20 us (hand-offs 16 us mean, 44 us p90,
// against 2-3 us now that a sleeper wakes on a futex of its own: core_gate.hpp).
#pragma once

#include "common/units.hpp"

namespace tandem::exec::cpu {

// Median over a few rounds of the time per turn and core, `cores` cores busy.
Seconds measure_busy_handoff_s(int cores);
// Median over a few rounds of the time to resume a thread on an idle core.
Seconds measure_idle_wake_s();

}  // namespace tandem::exec::cpu
