// Pipeline extrapolation: a pipeline in its periodic steady state (Strategy::pipeline_structure)
// adds the same time to every rank for each period of micro-batches, and nothing to its memory.
// So instead of an iteration of M micro-batches, two shorter ones are simulated, of M1 =
// periodic_from and M2 = M1 + period micro-batches per replica, each in a process of its own
// (SimGrid runs one engine per process), and every time-like figure (iteration, each rank's
// compute / exposed communication / idle / busy communication, energy) is carried along the line
// through them:  x(M) = x(M2) + (M - M2) / (M2 - M1) * (x(M2) - x(M1)).
// Peak memory is taken as simulated, after checking that both runs agree on it rank by rank
// (within 1%: a transient receive buffer may be alive at one run's peak and not the other's; the
// larger stands); when they do not (the pipeline was not yet at its steady state), the exact form
// runs instead.
//
// Named coarsening, as replica and tensor folding: on by default where it saves work, off with
// `--pipeline-extrapolation off`, never with a trace (a trace holds every op), and the output
// says when it was used. tests/sim/pipeline_extrapolation_test.cpp holds it to the exact form.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "platforms/cluster.hpp"
#include "sim/simulation.hpp"
#include "strategies/strategy.hpp"

namespace tandem::sim {

struct ExtrapolationPlan {
  bool apply = false;
  std::int64_t target = 0;   // micro-batches per replica of the real iteration
  std::int64_t shorter = 0;  // M1
  std::int64_t longer = 0;   // M2
  std::string note;          // what was done or why not; empty for a strategy without a periodic pipeline
};

ExtrapolationPlan plan_pipeline_extrapolation(const Strategy& strategy, const Cluster& cluster,
                                              const SimulationOptions& options);

// The figures of the target iteration from those of the shorter and the longer one; nullopt when
// their peak memory differs by more than 1% on some rank.
std::optional<SimulationResult> extrapolate(const SimulationResult& shorter, const SimulationResult& longer,
                                            const ExtrapolationPlan& plan);

// Runs `simulate_one` on the strategy with plan.shorter and with plan.longer micro-batches, each in
// a child process (both at once), and extrapolates. nullopt when the runs disagree on memory.
// Throws std::runtime_error with a child's error (a failed rank, a deadlock).
std::optional<SimulationResult> simulate_extrapolated(
    const Strategy& strategy, const ExtrapolationPlan& plan,
    const std::function<SimulationResult(const Strategy&)>& simulate_one);

// A result as bytes and back (without its trace), to come back from a child process.
std::string to_bytes(const SimulationResult& result);
SimulationResult result_from_bytes(std::string_view bytes);

}  // namespace tandem::sim
