// Builds the SimGrid platform of a Cluster, in code (no XML), under the engine's root zone.
//
//   node        a FullZone "g<G>n<N>" holding one host per device ("g<G>n<N>d<D>") and, when the
//               cluster has several nodes, a router "g<G>n<N>-gw" (the node's gateway). Routes:
//                 device i -> device j : [intra_i UP, (bus), intra_j DOWN]
//                                        (each intra port carries half of intra_node.latency_us;
//                                         the bus, for pcie and shared_memory, is one shared link)
//                 device i -> gateway  : [(bus, pcie only), nic_k UP], k = i / devices_per_nic
//                                        (one NIC per device, or nics_per_node shared NICs)
//                 device i -> itself   : [loop_i]  (memory bandwidth / 2: a copy reads and writes)
//               Intra ports and NICs are split-duplex (full rate each way).
//   star        a StarZone "<cluster>" of node zones; each node's uplink ("g<G>n<N>-uplink",
//               split-duplex, nic_count x nic bandwidth: non-blocking, the NICs cap single
//               flows) carries half a switch latency, so node -> node crosses one switch.
//   fat_tree    leaves: StarZones "leaf<L>" of nodes_per_leaf node zones (node uplinks as in a
//               star) plus a switch zone holding the leaf's gateway router; the spine: a StarZone
//               "<cluster>" of leaves, each leaf uplink ("leaf<L>-uplink", split-duplex) carrying
//               sum(node uplinks) / oversubscription and one switch latency, so leaf -> leaf
//               crosses three switches (leaf, spine, leaf). One leaf = a star.
// Shared cores: a node group with `shared_cores` (CPU devices that are threads of one machine)
// also gets a host "g<G>n<N>-cores" with that many cores and the property background_load; each
// of its device hosts names it in the property compute_host, and the simulator executes the
// device's compute there, so the node's ranks (and background_load always-busy threads) share
// the cores fairly. Routes, energy and the rank actors stay on the device hosts.
// Every host runs at kSimHostSpeedFlopsPerS with one core and carries the energy properties
// wattage_per_state = "idle:busy:busy" (the device profile) and wattage_off = "0", and the
// property "rank". Route latencies and single-flow bandwidths equal Cluster::path_latency_s /
// path_bandwidth_bytes_per_s; with neutral network factors (neutral_network_config) a lone
// transfer of S bytes takes exactly path_latency + S / path_bandwidth.
#pragma once

#include <simgrid/s4u.hpp>

#include <string>
#include <vector>

#include "platforms/cluster.hpp"
#include "sim/collectives/collective.hpp"

namespace tandem::sim {

// Every device host's speed: a compute op of duration t executes t * kSimHostSpeedFlopsPerS flops.
inline constexpr double kSimHostSpeedFlopsPerS = 1e12;
inline constexpr const char* kComputeHostProperty = "compute_host";
inline constexpr const char* kBackgroundLoadProperty = "background_load";

struct BuiltPlatform {
  std::vector<simgrid::s4u::Host*> hosts;  // index = global rank
  simgrid::s4u::NetZone* root = nullptr;
  simgrid::s4u::Host* storage = nullptr;  // with a StorageEndpoint: the file system's host
  std::vector<simgrid::s4u::Host*> node_hosts;  // with node hosts: per global node, its host's CPU
};

// Where checkpoints go (sim/storage_traffic.hpp): a host "storage" in a zone of its own, attached
// to the top of the network (the star's switch, or the fat tree's spine) by a split-duplex link
// of the file system's bandwidth and latency, so every node's writes cross its NICs, its uplink
// (and its leaf's uplink) and then share that link. Multi-node clusters only.
struct StorageEndpoint {
  BytesPerSecond bandwidth_bytes_per_s = 0;
  Seconds latency_s = 0;
};

// The "key:value" settings that make SimGrid's network model exact (latency + bytes / bandwidth,
// fair sharing, no TCP window cap): latency and bandwidth factors 1, no cross-traffic, and a
// TCP-gamma so large that its window cap (gamma / 2 latency) never binds. (TCP-gamma 0 also
// removes the cap, but SimGrid 3.32 then drops a communication's own rate bound, Comm::set_rate,
// on any route with latency: the checkpoint writers' per-node caps need that bound.)
const std::vector<std::string>& neutral_network_config();
// Applies them with Engine::set_config; call after creating the engine, before build_platform.
void use_neutral_network_model();

// Builds the cluster's platform. Call once per process, after creating the s4u::Engine (and after
// sg_host_energy_plugin_init() when energy is wanted), before any other zone exists; throws
// std::logic_error if the engine already has a platform.
//
// With `node_hosts` (a strategy that offloads to the host, Strategy::uses_host), every node also
// gets a host "g<G>n<N>-host" (its CPUs: one core whose executions are priced in seconds of the
// node's host memory bandwidth, so the node's ranks share it) and every device its own
// split-duplex PCIe link "g<G>n<N>d<D>-pcie" (the node's host.device_link): device -> host routes
// are [pcie UP, host latency], and the device's NIC route starts on its PCIe link too (GPUDirect
// RDMA crosses it), so copies to the host and network traffic share it. Needs every node group's
// `host` (std::invalid_argument naming the group otherwise).
BuiltPlatform build_platform(const Cluster& cluster, const StorageEndpoint* storage = nullptr, bool node_hosts = false);

// The host name of a rank, "g<group>n<node>d<device>".
std::string host_name(const Cluster& cluster, int rank);

// Figures per rank for algorithm choice. The view keeps its own copy of the cluster.
//   intra: the device's NVLink/PCIe/memcpy port (the shared bus if narrower), intra_node latency;
//   inter: the device's NIC (the PCIe bus if narrower), latency = own NIC twice + the switch
//          latencies of the longest inter-node path (1 switch, 3 across leaves of a fat tree)
//          + the PCIe bus at both ends. A single-node cluster reports its intra figures as inter.
TopologyView topology_view(const Cluster& cluster);

}  // namespace tandem::sim
