// The fields of a cluster file (platforms/clusters/*.yaml), section by section: what
// load_cluster accepts (it checks keys against these tables) and what `tandem fields cluster`
// prints. Ranges are the ones the reader checks (common/input_limits.hpp).
#pragma once

#include "common/field_doc.hpp"

namespace tandem::cluster_fields {

// A link's fields, shared by every port and bus: exactly one of the two bandwidths.
inline constexpr FieldDoc kBandwidthGb{"bandwidth_gb_per_s", "GB/s (1e9 bytes, per direction)", "required*",
                                       "bandwidth (*or bandwidth_gbit_per_s)", &limits::kLinkBandwidthGbPerS};
inline constexpr FieldDoc kBandwidthGbit{"bandwidth_gbit_per_s", "Gb/s (1e9 bits, per direction)", "-",
                                         "bandwidth as ports are sold (400 = NDR); not with bandwidth_gb_per_s"};
inline constexpr FieldDoc kLatencyRequired{"latency_us", "us", "required", "one-way latency", &limits::kLatencyUs};
inline constexpr FieldDoc kLatencyOptional{"latency_us", "us", "0", "one-way latency", &limits::kLatencyUs};

inline constexpr FieldDoc kRoot[] = {
    {"name", "text", "required", "the cluster's name (what scenarios' `cluster:` names)"},
    {"description", "text", "\"\"", "free text"},
    {"network", "section", "required with 2+ nodes", "the inter-node network"},
    {"node_groups", "list", "required", "groups of identical nodes; ranks are numbered group by group"},
};

inline constexpr FieldDoc kNodeGroup[] = {
    {"name", "text", "required", "unique within the cluster"},
    {"device", "profile name or path", "required", "a bundled device profile, or a .yaml relative to this file"},
    {"nodes", "count", "required", "nodes in the group", nullptr, &limits::kClusterDevices},
    {"devices_per_node", "count", "required", "devices in each node", nullptr, &limits::kClusterDevices},
    {"nics_per_node", "count", "devices_per_node",
     "network ports per node; fewer than devices: each NIC (behind its PCIe switch) is shared by "
     "devices_per_node / nics_per_node devices",
     nullptr, &limits::kClusterDevices},
    {"intra_node", "section", "required with 2+ devices per node", "the fabric inside a node"},
    {"nic", "section", "required with 2+ nodes", "each network port (NIC, rail)"},
    {"shared_cores", "count", "0 (own processor)", "CPU devices as threads: cores they share",
     nullptr, &limits::kClusterDevices},
    {"background_load", "cores", "0", "cores' worth kept busy by other programs (below shared_cores)"},
    {"host", "section", "-", "the node's host (CPUs, memory): what offload_optimizer uses"},
};

inline constexpr FieldDoc kHost[] = {
    {"memory_gb", "GB", "required", "the node's host memory (1e9 bytes)", &limits::kHostMemoryGb},
    {"memory_bandwidth_gb_per_s", "GB/s", "required",
     "achievable host memory bandwidth of the node (its CPUs together): what the host's optimizer step streams at",
     &limits::kLinkBandwidthGbPerS},
    {"device_link", "section", "required",
     "each device's own link to the host (PCIe), per direction; its latency (above 0) starts every copy"},
};

inline constexpr FieldDoc kIntraNode[] = {
    {"fabric", "nvswitch | pcie | shared_memory", "required", "how a node's devices are joined"},
    kBandwidthGb,
    kBandwidthGbit,
    kLatencyRequired,
    {"bus", "section", "required for pcie, shared_memory", "the shared bus (PCIe root complex, memory bus)"},
    {"collectives", "list", "-", "shared_memory only: measured collective costs (tandem calibrate)"},
    {"nvlink_generation", "2 | 3 | 4 | 5", "0 (not stated)", "nvswitch only: V100, A100, H100/H200, B200"},
};

inline constexpr FieldDoc kLink[] = {kBandwidthGb, kBandwidthGbit, kLatencyOptional};
inline constexpr FieldDoc kPort[] = {kBandwidthGb, kBandwidthGbit, kLatencyRequired};

inline constexpr FieldDoc kCollective[] = {
    {"kind", "all_reduce | reduce_scatter | all_gather | broadcast | all_to_all", "required", "the collective"},
    {"ranks", "count", "required", "members, 2 to devices_per_node"},
    {"latency_us", "us", "required", "fixed cost", &limits::kLatencyUs},
    {"bandwidth_gb_per_s", "GB/s", "required", "each member's buffer over this rate", &limits::kLinkBandwidthGbPerS},
};

inline constexpr FieldDoc kNetwork[] = {
    {"topology", "star | fat_tree", "required", "one switch, or leaves under a spine"},
    {"switch_latency_us", "us", "0", "per switch traversal", &limits::kLatencyUs},
    {"nodes_per_leaf", "count", "required for fat_tree", "nodes under one leaf switch", nullptr,
     &limits::kClusterDevices},
    {"oversubscription", "ratio", "1 (full bisection)", "fat_tree: leaf uplink oversubscription",
     &limits::kOversubscription},
};

inline constexpr FieldSection kSections[] = {
    {"", kRoot},
    {"node_groups[]", kNodeGroup},
    {"node_groups[].intra_node", kIntraNode},
    {"node_groups[].intra_node.bus", kLink},
    {"node_groups[].intra_node.collectives[]", kCollective},
    {"node_groups[].nic", kPort},
    {"node_groups[].host", kHost},
    {"node_groups[].host.device_link", kPort},
    {"network", kNetwork},
};

}  // namespace tandem::cluster_fields
