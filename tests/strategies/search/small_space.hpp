// The small search space the algorithm tests share: a 4-GPU-node H100 cluster, a batch of 16,
// three micro-batch sizes, three recomputation settings and ZeRO 0/1 (more than 100 candidates).
#pragma once

#include "platforms/cluster.hpp"
#include "strategies/search/search_space.hpp"

namespace tandem::search::test {

inline Enumeration small_space() {
  const Cluster cluster = find_cluster("tiny-h100");
  TrainingConfig training;
  training.global_batch_size = 16;
  SearchSpace space;
  space.micro_batch_size = {1, 2, 4};
  space.recompute = {Recompute::none, Recompute::selective, Recompute::full};
  space.zero_stage = {0, 1};
  return enumerate(complete_space(space, cluster, training), cluster, training);
}

}  // namespace tandem::search::test
