// Tensor folding: simulating one member of each tensor-parallel group and mirroring the others.
//
// The members of a tensor-parallel group run the same program on shards of the same shapes
// (Strategy::tensor_structure) on identical devices of one node, so they do the same thing at the
// same moments. When each such group owns its node's devices (no other rank on the node: the
// node's NVSwitch ports carry the group's traffic only), every device has its own network port,
// and the fabric is not oversubscribed, only the group's first member (its leader) runs; the
// others are ghosts, as folded replicas are (replica_folding.hpp). What the leader does outside
// its group (pipeline sends, data-parallel collectives) goes to other leaders, on the leader's own
// port, exactly as in the unfolded run; the ghosts' copies of that traffic used other ports that
// nothing simulated shares.
//
// A collective of a folded group then has one simulated member and meets no other traffic on its
// links: its duration depends only on its kind, size and the node's wiring. It runs once as flows
// (the aggregated form, ghosts answering from their own hosts) and every later identical one is
// priced from that first (TensorCollectiveMemo) — unless another collective of the same group is
// in flight, when they would share the links: then it runs as flows again.
// tests/sim/tensor_folding_test.cpp measures folded against unfolded.
#pragma once

#include <map>
#include <tuple>

#include "common/units.hpp"
#include "platforms/cluster.hpp"
#include "sim/replica_folding.hpp"
#include "strategies/strategy.hpp"

namespace tandem::sim {

// Folds the tensor groups of `strategy` into `plan` (after replica folding: a ghost replica's
// members mirror the simulated replica's leader). Sets plan.tensor_note either way.
void plan_tensor_folding(const Strategy& strategy, const Cluster& cluster, FoldingMode mode, bool record_trace,
                         FoldPlan& plan);

// Durations of folded groups' collectives, by what determines them.
class TensorCollectiveMemo {
 public:
  // node group, kind, bytes, algorithm
  using Key = std::tuple<int, int, Bytes, int>;
  const Seconds* find(const Key& key) const {
    const auto it = seconds_.find(key);
    return it == seconds_.end() ? nullptr : &it->second;
  }
  void store(const Key& key, Seconds seconds) { seconds_.emplace(key, seconds); }

 private:
  std::map<Key, Seconds> seconds_;
};

}  // namespace tandem::sim
