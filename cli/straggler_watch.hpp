// `tandem run`'s live straggler watch: after each iteration, each rank's kernel time against the
// median of its peers'. A rank at kRatio or more of that median for kIterations measured
// iterations in a row is named once ("straggler   rank 1: kernels 2.9x its peers' median for 3
// iterations, from iteration 4"); one that drops back below is named again when it returns.
// Kernel time, not the iteration's wall time: ranks wait for each other in collectives, so a
// straggler makes every rank's iteration long, but only its own kernels slow. A one-off slow
// iteration (a page fault, a preempted core) is noise: it takes three in a row. Peers are ranks of
// the same kind of work (`peer_class`, e.g. from the strategy's rank roles): a parameter server is
// no worker's peer, nor a pipeline stage of other layers another stage's.
#pragma once

#include <optional>
#include <utility>
#include <string>
#include <vector>

#include "exec/cpu/cpu_run.hpp"

namespace tandem::cli {

class StragglerWatch {
 public:
  static constexpr double kRatio = 2.0;
  static constexpr int kIterations = 3;

  // `peer_class`: per rank, its kind of work (ranks of one class are peers); empty: all one class.
  explicit StragglerWatch(std::vector<int> peer_class = {}) : peer_class_(std::move(peer_class)) {}
  // The peer classes of a strategy's ranks: equal roles (stage and layers) are one class.
  static std::vector<int> classes_of(const std::vector<RankRole>& roles);

  // The line to print for this iteration, if a rank has just become a straggler.
  std::optional<std::string> observe(const exec::cpu::IterationStats& stats);

 private:
  std::vector<int> streak_;     // per rank: measured iterations in a row at or past kRatio
  std::vector<bool> flagged_;   // per rank: named, and still slow
  std::vector<int> peer_class_;
};

}  // namespace tandem::cli
