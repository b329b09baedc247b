// The order in which asynchronous parameter servers apply the workers' pushes.
//
// An asynchronous server (Dean et al. 2012, "Large Scale Distributed Deep Networks", NIPS:
// Downpour SGD; Li et al. 2014, OSDI) applies each worker's gradient as it arrives and sends that
// worker the parameters as they are then: nobody waits for anybody, and a worker's gradient was
// computed on parameters as old as the updates applied since its last pull (real staleness).
// Which push arrives first is the machine's timing; to be reproducible, here it is the timing of a
// model: worker w's k-th push arrives at the sum of its first k step times, each its mean
// `step_s[w]` times a log-normal factor of mean 1 and log-spread `jitter` drawn from `seed`
// (0: no spread, the workers' speeds alone decide; equal speeds give round robin in rank order).
// The simulator and the CPU backend follow the same order, so a run is the same for the same seed
// on either, and the simulator times what it costs a worker to wait for its turn. Not modelled: the
// servers' own service time in the arrivals (a worker's next push is its previous one plus a step).
#pragma once

#include <cstdint>
#include <vector>

namespace tandem {

// The workers in the order their pushes are applied: each of the step_s.size() workers appears
// `steps` times (the run's iterations), ties broken by rank. Throws std::invalid_argument for no
// workers, a step time that is not positive and finite, or a negative or non-finite jitter.
std::vector<int> asynchronous_push_order(const std::vector<double>& step_s, int steps, double jitter,
                                         std::uint64_t seed);

}  // namespace tandem
