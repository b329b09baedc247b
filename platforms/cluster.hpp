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

// What one collective costs on a node whose devices are threads sharing memory (the CPU
// backend: the member that arrives last does every member's work, on its core): latency + bytes
// / bandwidth, bytes being each member's buffer, for groups of `ranks` devices of the node.
// `tandem calibrate` measures them; the simulator uses them instead of routing the collective's
// transfers over the node's links, which reproduce neither the bookkeeping nor the caches (a
// 4-member all-reduce of 16 KB: ~10 us measured, ~4 us through the fitted link).
struct CollectiveCost {
  std::string kind;  // all_reduce, reduce_scatter, all_gather, broadcast, all_to_all
  int ranks = 2;
  Seconds latency_s = 0;
  BytesPerSecond bandwidth_bytes_per_s = 0;
  Seconds seconds(Bytes bytes) const { return latency_s + bytes / bandwidth_bytes_per_s; }
};

// A node's host as offloading sees it (ParallelConfig::offload_optimizer): its memory, the rate
// its CPUs stream through it, and each device's own link to it (PCIe). Not given: 0s, and a
// strategy that offloads is refused on the group.
struct HostSpec {
  Bytes memory_bytes = 0;
  BytesPerSecond memory_bandwidth_bytes_per_s = 0;
  LinkSpec device_link;
  bool given() const { return memory_bytes > 0; }
};

struct NodeGroup {
  std::string name;
  DeviceProfile device;
  int node_count = 0;
  int devices_per_node = 0;
  IntraNodeFabric fabric = IntraNodeFabric::nvswitch;
  LinkSpec intra_link;  // each device's port into the intra-node fabric (NVLink, PCIe, memcpy)
  // NVLink generation of an nvswitch fabric (2 V100, 3 A100, 4 H100/H200, 5 B200; 0 = not stated):
  // the NCCL model (sim/collectives/nccl_model.hpp) takes the link count, the achievable rate per
  // link and the GPU generation from it.
  int nvlink_generation = 0;
  // Shared intra-node bus (PCIe root complex, memory bus); bandwidth 0 = none (NVSwitch).
  LinkSpec intra_bus;
  LinkSpec nic;  // each network interface (rail); bandwidth 0 for single-node groups
  // NICs per node (`nics_per_node`; 0 = one per device, as DGX rails). Fewer NICs than devices
  // ("4 NICs shared by 8 GPUs", a NIC behind each PCIe switch): device d uses NIC
  // d / devices_per_nic(), and the devices sharing it share its bandwidth in the platform.
  int nics_per_node = 0;
  int nic_count() const { return nics_per_node > 0 ? nics_per_node : devices_per_node; }
  int devices_per_nic() const { return devices_per_node / nic_count(); }
  // CPU devices that are threads on one machine: the node's devices compute on `shared_cores`
  // cores together (0: every device has its own processor, as GPUs do), of which other programs
  // keep `background_load` cores' worth busy. More busy ranks than free cores slow each of them
  // down (the simulator shares the cores fairly; sim/simulation.cpp).
  int shared_cores = 0;
  double background_load = 0;
  std::vector<CollectiveCost> collective_costs;  // shared_memory fabric only; may be empty
  HostSpec host;

  // The measured cost of `kind` over `ranks` of one node's devices, if there is one.
  const CollectiveCost* collective_cost(const std::string& kind, int ranks) const;
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
  std::string description;  // free text from the file ("" if none)

  int device_count() const;
  int node_count() const;
  DeviceLocation locate(int rank) const;
  const NodeGroup& group_of(int rank) const { return groups[locate(rank).group]; }
  const DeviceProfile& device_of(int rank) const { return group_of(rank).device; }
  bool same_node(int rank_a, int rank_b) const;
  bool is_heterogeneous() const;  // more than one device kind
  // What ranks 0..ranks-1 cost per second, from their devices' price_per_hour_usd; 0 when one of
  // them has no price (a partial sum would understate the cost).
  double usd_per_s(int ranks) const;

  // ---- where things are (what the SimGrid platform builder builds; see sim/platform_builder) ----
  int first_rank(int group) const;        // global rank of the group's first device
  int first_node(int group) const;        // global node index of the group's first node
  int global_node_of(int rank) const { return locate(rank).global_node; }
  const NodeGroup& group_of_node(int global_node) const;
  // Leaf switches: global nodes [k*nodes_per_leaf, (k+1)*nodes_per_leaf) hang off leaf k
  // (fat_tree); a star has one switch, leaf 0. A fat tree with one leaf is a star.
  int leaf_count() const;
  int leaf_of_node(int global_node) const;
  bool has_spine() const { return network.topology == InterNodeTopology::fat_tree && leaf_count() > 1; }
  // A node's link into its (leaf) switch: the sum of its NICs (non-blocking).
  BytesPerSecond node_uplink_bytes_per_s(int global_node) const;
  // A leaf's link into the spine: the sum of its nodes' uplinks / oversubscription.
  BytesPerSecond leaf_uplink_bytes_per_s(int leaf) const;
  // Switches a transfer from rank a to rank b traverses: 0 in a node, 1 under one switch,
  // 3 across leaves (leaf, spine, leaf).
  int switch_hops(int rank_a, int rank_b) const;
  // The ideal one-way latency and single-flow bandwidth of the route from a to b, as built:
  //   same device : 0 and memory bandwidth / 2 (a copy reads and writes)
  //   same node   : intra.latency (+ bus latency) and min(intra_a, intra_b, bus)
  //   across nodes: nic_a + nic_b + switch_hops * switch_latency (+ both pcie buses' latency)
  //                 and min(nic_a, nic_b, uplinks on the way, pcie buses)
  Seconds path_latency_s(int rank_a, int rank_b) const;
  BytesPerSecond path_bandwidth_bytes_per_s(int rank_a, int rank_b) const;
};

// Whether the cluster is this machine as the CPU backend runs it: one node whose devices are all
// cpu devices (localhost, or a calibrated copy of it under any name).
bool is_this_machine(const Cluster& cluster);

// Loads a cluster description; device names resolve through find_device_profile
// (relative to `devices_dir` if given). Errors name file, line, field.
Cluster load_cluster(const std::string& path, const std::string& devices_dir = "");
// Resolves a name like "dgx-a100" to platforms/clusters/dgx-a100.yaml (file stem, case-insensitive),
// or loads a path (anything containing '/' or ending in .yaml). An unknown name raises an
// InputError (file = the name, field "cluster") listing the available clusters.
Cluster find_cluster(const std::string& name_or_path);
// The bundled cluster names (file stems of platforms/clusters/*.yaml), sorted.
std::vector<std::string> available_clusters();

IntraNodeFabric parse_intra_node_fabric(const std::string& text);      // std::invalid_argument
InterNodeTopology parse_inter_node_topology(const std::string& text);  // std::invalid_argument

// The bundled data folders (platforms/devices, platforms/clusters, scenarios): TANDEM_SOURCE_DIR/sub,
// or $TANDEM_DATA_DIR/sub when that environment variable is set (and not empty).
std::string bundled_dir(const std::string& sub);

}  // namespace tandem
