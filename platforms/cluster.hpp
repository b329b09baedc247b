// A cluster: node groups (each a number of identical nodes holding identical devices and an
// intra-node fabric) joined by an inter-node network. Several groups of different device kinds
// in one cluster is what "heterogeneous" means in Tandem.
//
// Global ranks are numbered group by group, node by node, device by device: rank r lives on
// device `local` of node `node` of group `group`.
#pragma once

#include <string>
#include <vector>

#include "common/units.hpp"
#include "platforms/device.hpp"

namespace tandem {

struct LinkSpec {
  BytesPerSecond bandwidth_bytes_per_s = 0;  // per direction
  Seconds latency_s = 0;
};

enum class IntraNodeFabric { nvswitch, pcie, shared_memory };
const char* to_string(IntraNodeFabric fabric);

struct NodeGroup {
  std::string name;
  DeviceProfile device;
  int node_count = 0;
  int devices_per_node = 0;
  IntraNodeFabric fabric = IntraNodeFabric::nvswitch;
  LinkSpec intra_link;  // each device's port into the intra-node fabric (NVLink, PCIe, memcpy)
  // Shared intra-node bus (PCIe root complex, memory bus); bandwidth 0 = none (NVSwitch).
  LinkSpec intra_bus;
  LinkSpec nic;  // each device's network interface (rail); bandwidth 0 for single-node groups
};

enum class InterNodeTopology { star, fat_tree };
const char* to_string(InterNodeTopology topology);

struct InterNodeNetwork {
  InterNodeTopology topology = InterNodeTopology::star;
  Seconds switch_latency_s = 0;  // per switch traversal
  // fat_tree: nodes under one leaf switch, and the leaf uplink oversubscription (1 = full bisection)
  int nodes_per_leaf = 1;
  double oversubscription = 1.0;
};

struct DeviceLocation {
  int group = 0;        // index into Cluster::groups
  int node = 0;         // node index within the group
  int global_node = 0;  // node index across the cluster
  int local = 0;        // device index within the node
};

struct Cluster {
  std::string name;
  std::string file;
  std::vector<NodeGroup> groups;
  InterNodeNetwork network;

  int device_count() const;
  int node_count() const;
  DeviceLocation locate(int rank) const;
  const NodeGroup& group_of(int rank) const { return groups[locate(rank).group]; }
  const DeviceProfile& device_of(int rank) const { return group_of(rank).device; }
  bool same_node(int rank_a, int rank_b) const;
  bool is_heterogeneous() const;  // more than one device kind
};

// Loads a cluster description; device names resolve through find_device_profile
// (relative to `devices_dir` if given). Errors name file, line, field.
Cluster load_cluster(const std::string& path, const std::string& devices_dir = "");
// Resolves a name like "dgx-a100" to platforms/clusters/dgx-a100.yaml, or loads a path.
Cluster find_cluster(const std::string& name_or_path);

// The bundled data folders (platforms/devices, platforms/clusters, scenarios).
std::string bundled_dir(const std::string& sub);

}  // namespace tandem
