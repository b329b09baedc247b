// The tuner: NCCL's (nccl_model.hpp) where the group has an NCCL fabric; elsewhere an alpha-beta
// estimate of every algorithm that implements the collective on this group, fastest wins; ties go to the earlier of ring, hierarchical, tree, direct (so the choice
// is deterministic and prefers the simpler algorithm).
#include <algorithm>
#include <limits>

#include "sim/collectives/algorithms.hpp"

namespace tandem::sim {

namespace collectives {

CollectiveAlgorithm choose_for_shape(OpKind kind, Bytes bytes, const GroupShape& shape) {
  if (kind == OpKind::all_to_all) return CollectiveAlgorithm::direct;
  if (shape.size <= 1) return CollectiveAlgorithm::ring;
  if (shape.nccl) {
    // NCCL's own tuner (nccl_model.hpp), on the group's node count.
    const nccl::Placement group{shape.size, std::max(1, shape.nodes())};
    return collective_algorithm_of(nccl::tuner_choice(kind, bytes, *shape.nccl, group).algorithm);
  }
  struct Candidate {
    CollectiveAlgorithm algorithm;
    Seconds seconds;
  };
  const Candidate candidates[] = {
      {CollectiveAlgorithm::ring, ring_estimate(kind, bytes, shape)},
      {CollectiveAlgorithm::hierarchical, hierarchical_estimate(kind, bytes, shape)},
      {CollectiveAlgorithm::tree, tree_estimate(kind, bytes, shape)},
      {CollectiveAlgorithm::direct, direct_estimate(kind, bytes, shape)},
  };
  CollectiveAlgorithm best = CollectiveAlgorithm::ring;
  Seconds best_seconds = std::numeric_limits<double>::infinity();
  for (const Candidate& c : candidates) {
    if (c.seconds < best_seconds * (1.0 - 1e-9)) {
      best = c.algorithm;
      best_seconds = c.seconds;
    }
  }
  return best;
}

}  // namespace collectives

CollectiveAlgorithm choose_algorithm(OpKind kind, Bytes bytes, const std::vector<int>& ranks,
                                     const TopologyView& topology) {
  return collectives::choose_for_shape(kind, bytes, collectives::analyze_group(ranks, topology));
}

}  // namespace tandem::sim
