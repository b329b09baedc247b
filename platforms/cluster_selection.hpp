// The part of a cluster a plan uses: how many nodes of each node group (each a device kind). A
// search that may leave nodes idle (search_space.hpp, `nodes`) turns this knob, so that a plan on
// fewer or cheaper devices can win on cost.
//
// The selection keeps each group's first nodes, in the cluster's order, on the same network; a
// group left with no node is dropped. Ranks are numbered over the selection as over any cluster
// (cluster.hpp), so a strategy sees an ordinary, smaller cluster.
#pragma once

#include <string>
#include <vector>

#include "platforms/cluster.hpp"

namespace tandem {

// nodes_per_group[g] nodes of group g (0..its node count); at least one node in all.
// std::invalid_argument otherwise.
Cluster select_nodes(const Cluster& cluster, const std::vector<int>& nodes_per_group);

// Devices a selection holds.
int selected_devices(const Cluster& cluster, const std::vector<int>& nodes_per_group);

// "4 h100 + 2 a100" (groups with no node left out).
std::string selection_text(const Cluster& cluster, const std::vector<int>& nodes_per_group);

// The selected cluster as a cluster file's text: the cluster's own file with the selected node
// counts (every other field as written there), so that `tandem simulate` of a plan found on a
// selection runs on the same devices. std::runtime_error when the cluster file cannot be read.
std::string selected_cluster_yaml(const Cluster& cluster, const std::vector<int>& nodes_per_group);

}  // namespace tandem
