// Shrink policy, re-planned by the search (reliability.replan: search): when nodes fail, the job
// goes on on the surviving nodes with the best plan the strategy search finds for them, not with
// its own layout minus the broken replicas. A replica that spans nodes (tensor x pipeline larger
// than a node) is lost whole when one of its nodes fails, so the layout policy leaves its other
// nodes idle; the search may use every survivor, with another split (fewer pipeline stages, more
// data parallelism, another micro-batch).
//
// For the job's node count and each of the `simulated` largest below it, a search over the scenario's
// `search:` section (its default space without one), its devices pinned to the survivors', ranks
// plans by iteration time; the best one's throughput over the scenario's own plan at full width
// (both without stragglers, the global batch kept) is what the job runs at with that many nodes.
// Below them throughput falls in proportion to the nodes from the smallest simulated. A restart
// into a new plan reads the checkpoint in the new layout: the same bytes as a restart in place,
// so the restart's cost is unchanged (resharding is the reload).
//
// Homogeneous clusters only (which node group loses a node would be one more draw).
#pragma once

#include <string>
#include <vector>

#include "scenarios/scenario.hpp"

namespace tandem {

struct ReplannedShrink {
  int nodes = 0;                    // the job's at full width
  std::vector<double> throughput;   // index: nodes alive (0..nodes), 1 at full width
  std::vector<std::string> plans;   // index: nodes alive; the plan found ("" beyond the simulated)
  // The search's best plan at full width over the scenario's own (> 1: the scenario could run
  // faster as planned; the survivors' throughput stays relative to the scenario's plan).
  double full_width_speedup = 1;
};

// Throws InputError at reliability.replan when the cluster mixes node groups, the job uses one
// node, or no plan fits on the largest survivor count.
ReplannedShrink replan_shrink(const Scenario& base, int simulated);

}  // namespace tandem
