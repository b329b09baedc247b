// A calibration workload's step as a real backend ran it, read from the run's trace: what the CPU
// and CUDA microbenchmarks (exec/cpu/calibration, exec/cuda/calibration) hand calibrate().
//
// Every op is timed where the run placed it (its inputs just written by the op before, the
// allocator and caches as a training step leaves them), not alone in a loop. The gaps between
// consecutive compute kernels of rank 0 are the backend's own cost per op: dispatch, bookkeeping,
// the zero-fill of new tensors.
#pragma once

#include "analysis/calibration/microbenchmarks.hpp"
#include "exec/cpu/cpu_run.hpp"

namespace tandem::exec {

// The measured iterations of `run` (those past `warmup`): the step's median time; per op label
// the median over iterations of its duration (a compute op's median over the ranks that ran it,
// replicas side by side; a collective's shortest, the transfer without the wait for late peers);
// the slowest replica's kernel time over the mean; and the mean gap between rank 0's compute
// kernels, leaving out gaps around a communication op and gaps of `longest_own_gap_s` or more
// (a CPU thread descheduled or waiting for a peer: not the op's cost).
calibration::StepMeasurement step_from_trace(const cpu::RunResult& run, int warmup, Seconds longest_own_gap_s);

}  // namespace tandem::exec
