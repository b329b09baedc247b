#include "platforms/cluster.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <stdexcept>

#include "common/input_error.hpp"
#include "common/input_file.hpp"
#include "common/yaml_reader.hpp"
#include "platforms/cluster_fields.hpp"

namespace tandem {
namespace fs = std::filesystem;

// ---------------------------------------------------------------------------------------------
// Names
// ---------------------------------------------------------------------------------------------

const char* to_string(IntraNodeFabric fabric) {
  switch (fabric) {
    case IntraNodeFabric::nvswitch: return "nvswitch";
    case IntraNodeFabric::pcie: return "pcie";
    case IntraNodeFabric::shared_memory: return "shared_memory";
  }
  return "?";
}

const char* to_string(InterNodeTopology topology) {
  switch (topology) {
    case InterNodeTopology::star: return "star";
    case InterNodeTopology::fat_tree: return "fat_tree";
  }
  return "?";
}

IntraNodeFabric parse_intra_node_fabric(const std::string& text) {
  if (text == "nvswitch") return IntraNodeFabric::nvswitch;
  if (text == "pcie") return IntraNodeFabric::pcie;
  if (text == "shared_memory") return IntraNodeFabric::shared_memory;
  throw std::invalid_argument("unknown intra-node fabric '" + text +
                              "' (expected nvswitch, pcie or shared_memory)");
}

InterNodeTopology parse_inter_node_topology(const std::string& text) {
  if (text == "star") return InterNodeTopology::star;
  if (text == "fat_tree") return InterNodeTopology::fat_tree;
  throw std::invalid_argument("unknown topology '" + text + "' (expected star or fat_tree)");
}

std::string bundled_dir(const std::string& sub) {
  const char* env = std::getenv("TANDEM_DATA_DIR");
  const std::string base = (env != nullptr && *env != '\0') ? std::string(env) : std::string(TANDEM_SOURCE_DIR);
  return sub.empty() ? base : base + "/" + sub;
}

// ---------------------------------------------------------------------------------------------
// Cluster queries
// ---------------------------------------------------------------------------------------------

int Cluster::device_count() const {
  int n = 0;
  for (const auto& g : groups) n += g.node_count * g.devices_per_node;
  return n;
}

int Cluster::node_count() const {
  int n = 0;
  for (const auto& g : groups) n += g.node_count;
  return n;
}

DeviceLocation Cluster::locate(int rank) const {
  if (rank < 0) throw std::out_of_range("rank " + std::to_string(rank) + " is negative");
  int first = 0;
  int first_node_index = 0;
  for (int gi = 0; gi < static_cast<int>(groups.size()); ++gi) {
    const NodeGroup& g = groups[gi];
    const int size = g.node_count * g.devices_per_node;
    if (rank < first + size) {
      DeviceLocation loc;
      loc.group = gi;
      loc.node = (rank - first) / g.devices_per_node;
      loc.local = (rank - first) % g.devices_per_node;
      loc.global_node = first_node_index + loc.node;
      return loc;
    }
    first += size;
    first_node_index += g.node_count;
  }
  throw std::out_of_range("rank " + std::to_string(rank) + " is beyond the " +
                          std::to_string(first) + " devices of cluster '" + name + "'");
}

bool Cluster::same_node(int rank_a, int rank_b) const {
  return locate(rank_a).global_node == locate(rank_b).global_node;
}

bool Cluster::is_heterogeneous() const {
  for (const auto& g : groups) {
    if (g.device.name != groups.front().device.name) return true;
  }
  return false;
}

bool is_this_machine(const Cluster& cluster) {
  if (cluster.node_count() != 1) return false;
  return std::all_of(cluster.groups.begin(), cluster.groups.end(),
                     [](const NodeGroup& g) { return g.node_count == 0 || g.device.kind == "cpu"; });
}

double Cluster::usd_per_s(int ranks) const {
  double per_hour = 0;
  for (int r = 0; r < ranks; ++r) {
    const double price = device_of(r).price_per_hour_usd;
    if (!(price > 0)) return 0;
    per_hour += price;
  }
  return per_hour / 3600.0;
}

int Cluster::first_rank(int group) const {
  int first = 0;
  for (int gi = 0; gi < group; ++gi) first += groups.at(gi).node_count * groups[gi].devices_per_node;
  return first;
}

int Cluster::first_node(int group) const {
  int first = 0;
  for (int gi = 0; gi < group; ++gi) first += groups.at(gi).node_count;
  return first;
}

const NodeGroup& Cluster::group_of_node(int global_node) const {
  int first = 0;
  for (const auto& g : groups) {
    if (global_node >= first && global_node < first + g.node_count) return g;
    first += g.node_count;
  }
  throw std::out_of_range("node " + std::to_string(global_node) + " is not in cluster '" + name + "'");
}

int Cluster::leaf_count() const {
  if (network.topology != InterNodeTopology::fat_tree) return 1;
  const int per_leaf = std::max(1, network.nodes_per_leaf);
  return (node_count() + per_leaf - 1) / per_leaf;
}

int Cluster::leaf_of_node(int global_node) const {
  if (network.topology != InterNodeTopology::fat_tree) return 0;
  return global_node / std::max(1, network.nodes_per_leaf);
}

BytesPerSecond Cluster::node_uplink_bytes_per_s(int global_node) const {
  const NodeGroup& g = group_of_node(global_node);
  return g.nic_count() * g.nic.bandwidth_bytes_per_s;
}

BytesPerSecond Cluster::leaf_uplink_bytes_per_s(int leaf) const {
  const int per_leaf = network.topology == InterNodeTopology::fat_tree ? std::max(1, network.nodes_per_leaf)
                                                                       : node_count();
  const int begin = leaf * per_leaf;
  const int end = std::min(node_count(), begin + per_leaf);
  BytesPerSecond sum = 0;
  for (int n = begin; n < end; ++n) sum += node_uplink_bytes_per_s(n);
  return sum / network.oversubscription;
}

int Cluster::switch_hops(int rank_a, int rank_b) const {
  const DeviceLocation a = locate(rank_a);
  const DeviceLocation b = locate(rank_b);
  if (a.global_node == b.global_node) return 0;
  if (!has_spine() || leaf_of_node(a.global_node) == leaf_of_node(b.global_node)) return 1;
  return 3;
}

namespace {
bool has_bus(const NodeGroup& g) { return g.intra_bus.bandwidth_bytes_per_s > 0; }
// The bus lies on the way to the NIC for PCIe nodes (GPU -> PCIe switch -> NIC).
bool bus_on_nic_path(const NodeGroup& g) { return g.fabric == IntraNodeFabric::pcie && has_bus(g); }
}  // namespace

Seconds Cluster::path_latency_s(int rank_a, int rank_b) const {
  if (rank_a == rank_b) return 0;
  const DeviceLocation a = locate(rank_a);
  const DeviceLocation b = locate(rank_b);
  const NodeGroup& ga = groups[a.group];
  const NodeGroup& gb = groups[b.group];
  if (a.global_node == b.global_node) {
    return ga.intra_link.latency_s + (has_bus(ga) ? ga.intra_bus.latency_s : 0.0);
  }
  Seconds latency = ga.nic.latency_s + gb.nic.latency_s + switch_hops(rank_a, rank_b) * network.switch_latency_s;
  if (bus_on_nic_path(ga)) latency += ga.intra_bus.latency_s;
  if (bus_on_nic_path(gb)) latency += gb.intra_bus.latency_s;
  return latency;
}

BytesPerSecond Cluster::path_bandwidth_bytes_per_s(int rank_a, int rank_b) const {
  const DeviceLocation a = locate(rank_a);
  const DeviceLocation b = locate(rank_b);
  const NodeGroup& ga = groups[a.group];
  const NodeGroup& gb = groups[b.group];
  if (rank_a == rank_b) return ga.device.memory_bandwidth_bytes_per_s / 2;
  if (a.global_node == b.global_node) {
    BytesPerSecond bw = ga.intra_link.bandwidth_bytes_per_s;
    if (has_bus(ga)) bw = std::min(bw, ga.intra_bus.bandwidth_bytes_per_s);
    return bw;
  }
  BytesPerSecond bw = std::min(ga.nic.bandwidth_bytes_per_s, gb.nic.bandwidth_bytes_per_s);
  bw = std::min({bw, node_uplink_bytes_per_s(a.global_node), node_uplink_bytes_per_s(b.global_node)});
  const int leaf_a = leaf_of_node(a.global_node);
  const int leaf_b = leaf_of_node(b.global_node);
  if (has_spine() && leaf_a != leaf_b) {
    bw = std::min({bw, leaf_uplink_bytes_per_s(leaf_a), leaf_uplink_bytes_per_s(leaf_b)});
  }
  if (bus_on_nic_path(ga)) bw = std::min(bw, ga.intra_bus.bandwidth_bytes_per_s);
  if (bus_on_nic_path(gb)) bw = std::min(bw, gb.intra_bus.bandwidth_bytes_per_s);
  return bw;
}

// ---------------------------------------------------------------------------------------------
// Loading
// ---------------------------------------------------------------------------------------------

namespace {


std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

bool looks_like_path(const std::string& name) {
  const auto ends_with = [&](const char* suffix) {
    const std::string s(suffix);
    return name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0;
  };
  return name.find('/') != std::string::npos || ends_with(".yaml") || ends_with(".yml");
}

// A link's bandwidth, in GB/s (bytes, 1e9) or Gb/s (bits, 1e9: what InfiniBand and Ethernet
// ports are sold in); exactly one of the two.
BytesPerSecond bandwidth(const YamlNode& link) {
  auto bytes = link.get("bandwidth_gb_per_s");
  auto bits = link.get("bandwidth_gbit_per_s");
  if (bytes && bits) bits->fail("give bandwidth_gb_per_s or bandwidth_gbit_per_s, not both");
  if (bits) {
    // Checked in GB/s, the unit of the bound: 8 Gb/s is 1 GB/s.
    const limits::Range& gb = limits::kLinkBandwidthGbPerS;
    return bits->in(limits::Range{gb.min * 8, gb.max * 8, "Gb/s"}) * 1e9 / 8;
  }
  return link["bandwidth_gb_per_s"].in(limits::kLinkBandwidthGbPerS) * kGB;
}

LinkSpec port(const YamlNode& link, bool latency_required) {
  LinkSpec spec;
  spec.bandwidth_bytes_per_s = bandwidth(link);
  if (latency_required) {
    spec.latency_s = link["latency_us"].in(limits::kLatencyUs) * 1e-6;
  } else if (auto latency = link.get("latency_us")) {
    spec.latency_s = latency->in(limits::kLatencyUs) * 1e-6;
  }
  return spec;
}

// intra_node.collectives: [{kind, ranks, latency_us, bandwidth_gb_per_s}, ...].
std::vector<CollectiveCost> collective_costs(const YamlNode& list, int devices_per_node) {
  std::vector<CollectiveCost> costs;
  for (const YamlNode& item : list.items()) {
    item.only_keys(cluster_fields::kCollective);
    CollectiveCost c;
    const YamlNode kind = item["kind"];
    c.kind = kind.as_string();
    if (c.kind != "all_reduce" && c.kind != "reduce_scatter" && c.kind != "all_gather" && c.kind != "broadcast" &&
        c.kind != "all_to_all")
      kind.fail("must be all_reduce, reduce_scatter, all_gather, broadcast or all_to_all, got '" + c.kind + "'");
    const YamlNode ranks = item["ranks"];
    const long long n = ranks.as_int();
    if (n < 2 || n > devices_per_node)
      ranks.fail("must be between 2 and devices_per_node (" + std::to_string(devices_per_node) + "), got " +
                 ranks.as_string());
    c.ranks = static_cast<int>(n);
    c.latency_s = item["latency_us"].in(limits::kLatencyUs) * 1e-6;
    c.bandwidth_bytes_per_s = item["bandwidth_gb_per_s"].in(limits::kLinkBandwidthGbPerS) * kGB;
    for (const CollectiveCost& earlier : costs)
      if (earlier.kind == c.kind && earlier.ranks == c.ranks)
        item.fail("a second cost for " + c.kind + " over " + std::to_string(c.ranks) + " ranks");
    costs.push_back(c);
  }
  return costs;
}

}  // namespace

const CollectiveCost* NodeGroup::collective_cost(const std::string& kind, int ranks) const {
  for (const CollectiveCost& c : collective_costs)
    if (c.kind == kind && c.ranks == ranks) return &c;
  return nullptr;
}

Cluster load_cluster(const std::string& path, const std::string& devices_dir) {
  const YamlNode root = YamlNode::load_file(path);
  root.only_keys(cluster_fields::kRoot);

  Cluster cluster;
  cluster.file = path;
  cluster.name = root.str("name");
  if (cluster.name.empty()) root["name"].fail("must not be empty");
  cluster.description = root.str_or("description", "");

  const std::string devices = devices_dir.empty() ? bundled_dir("platforms/devices") : devices_dir;
  const fs::path cluster_dir = fs::path(path).parent_path();

  const YamlNode group_list = root["node_groups"];
  const std::vector<YamlNode> group_nodes = group_list.items();
  if (group_nodes.empty()) group_list.fail("needs at least one node group");

  long long total_devices = 0;
  long long total_nodes = 0;
  for (const YamlNode& g : group_nodes) {
    g.only_keys(cluster_fields::kNodeGroup);
    NodeGroup group;

    const YamlNode name = g["name"];
    group.name = name.as_string();
    if (group.name.empty()) name.fail("must not be empty");
    for (const auto& other : cluster.groups) {
      if (other.name == group.name) name.fail("duplicate node group name '" + group.name + "'");
    }

    // The device: a bundled profile name, or a path (relative to this cluster file).
    const YamlNode device = g["device"];
    std::string reference = device.as_string();
    if (looks_like_path(reference) && fs::path(reference).is_relative()) {
      reference = (cluster_dir / reference).string();
    }
    const std::string profile = device_profile_path(reference, devices);
    if (profile.empty()) {
      std::string list;
      for (const auto& n : available_device_profiles(devices)) list += (list.empty() ? "" : ", ") + n;
      device.fail("unknown device '" + device.as_string() + "' (available in " + devices + ": " +
                  (list.empty() ? "none" : list) + ")");
    }
    group.device = load_device_profile(profile);  // its own errors name the profile's file
    if (auto cores = g.get("shared_cores")) {
      group.shared_cores = static_cast<int>(cores->count(limits::kClusterDevices));
    }
    if (auto load = g.get("background_load")) {
      if (!g.has("shared_cores")) load->fail("needs shared_cores (the cores the load competes for)");
      group.background_load = load->in(limits::Range{0, static_cast<double>(limits::kMaxClusterDevices), "cores"});
      if (group.background_load >= group.shared_cores) load->fail("must be below shared_cores (the cores it takes)");
    }

    const YamlNode nodes = g["nodes"];
    const YamlNode per_node = g["devices_per_node"];
    const long long node_count = nodes.count(limits::kClusterDevices);
    const long long devices_per_node = per_node.count(limits::kClusterDevices);
    if (total_devices + node_count * devices_per_node > limits::kMaxClusterDevices) {  // each <= 2^18: no overflow
      nodes.fail("the cluster would have " + std::to_string(total_devices + node_count * devices_per_node) +
                 " devices, more than the " + std::to_string(limits::kMaxClusterDevices) +
                 " Tandem simulates (common/input_limits.hpp)");
    }
    group.node_count = static_cast<int>(node_count);
    group.devices_per_node = static_cast<int>(devices_per_node);
    total_devices += node_count * devices_per_node;
    if (auto nics = g.get("nics_per_node")) {
      const long long n = nics->count(limits::kClusterDevices);
      if (n > devices_per_node || devices_per_node % n != 0)
        nics->fail("must divide devices_per_node (" + std::to_string(devices_per_node) + "): each NIC is shared by "
                   "as many devices as the others, got " + nics->as_string());
      group.nics_per_node = static_cast<int>(n);
    }
    total_nodes += node_count;

    auto intra = g.get("intra_node");
    if (!intra && group.devices_per_node > 1) {
      (void)g["intra_node"];  // "missing required field" at node_groups[i].intra_node
    }
    if (intra) {
      intra->only_keys(cluster_fields::kIntraNode);
      const YamlNode fabric = (*intra)["fabric"];
      try {
        group.fabric = parse_intra_node_fabric(fabric.as_string());
      } catch (const std::invalid_argument&) {
        fabric.fail("must be nvswitch, pcie or shared_memory, got '" + fabric.as_string() + "'");
      }
      group.intra_link = port(*intra, true);
      if (auto generation = intra->get("nvlink_generation")) {
        if (group.fabric != IntraNodeFabric::nvswitch) generation->fail("only an nvswitch fabric has an NVLink generation");
        const long long g_number = generation->positive_int();
        if (g_number < 2 || g_number > 5) generation->fail("must be 2 (V100), 3 (A100), 4 (H100, H200) or 5 (B200)");
        group.nvlink_generation = static_cast<int>(g_number);
      }
      if (group.fabric == IntraNodeFabric::nvswitch) {
        if (auto bus = intra->get("bus")) {
          bus->fail("only pcie and shared_memory fabrics have a shared bus (nvswitch is non-blocking)");
        }
      } else {
        const YamlNode bus = (*intra)["bus"];  // required: the PCIe root complex / memory bus
        bus.only_keys(cluster_fields::kLink);
        group.intra_bus = port(bus, false);
      }
      if (auto collectives = intra->get("collectives")) {
        if (group.fabric != IntraNodeFabric::shared_memory)
          collectives->fail("measured collective costs are for shared_memory fabrics (CPU devices' threads)");
        group.collective_costs = collective_costs(*collectives, group.devices_per_node);
      }
    } else {
      // One device per node and no intra_node given: nothing moves inside the node.
      group.fabric = IntraNodeFabric::nvswitch;
    }

    if (auto nic = g.get("nic")) {
      nic->only_keys(cluster_fields::kPort);
      group.nic = port(*nic, true);
    }
    if (auto host = g.get("host")) {
      host->only_keys(cluster_fields::kHost);
      group.host.memory_bytes = (*host)["memory_gb"].in(limits::kHostMemoryGb) * kGB;
      group.host.memory_bandwidth_bytes_per_s = (*host)["memory_bandwidth_gb_per_s"].in(limits::kLinkBandwidthGbPerS) * kGB;
      const YamlNode link = (*host)["device_link"];
      link.only_keys(cluster_fields::kPort);
      group.host.device_link = port(link, true);
      // SimGrid shares a link among flows in inverse proportion to their routes' latencies: a
      // copy without one would wait for every other flow on the link to end.
      if (group.host.device_link.latency_s <= 0) link["latency_us"].fail("must be above 0");
    }
    cluster.groups.push_back(std::move(group));
  }

  // Every group needs a NIC as soon as anything crosses nodes.
  if (total_nodes > 1) {
    for (std::size_t i = 0; i < group_nodes.size(); ++i) {
      if (cluster.groups[i].nic.bandwidth_bytes_per_s <= 0) {
        throw InputError(path, group_nodes[i].line(), group_nodes[i].path() + ".nic",
                         "missing required field: a cluster of more than one node needs each group's "
                         "nic (every device's network port)");
      }
    }
  }

  auto network = root.get("network");
  if (!network && total_nodes > 1) (void)root["network"];  // "missing required field"
  if (network) {
    network->only_keys(cluster_fields::kNetwork);
    const YamlNode topology = (*network)["topology"];
    try {
      cluster.network.topology = parse_inter_node_topology(topology.as_string());
    } catch (const std::invalid_argument&) {
      topology.fail("must be star or fat_tree, got '" + topology.as_string() + "'");
    }
    if (auto latency = network->get("switch_latency_us")) {
      cluster.network.switch_latency_s = latency->in(limits::kLatencyUs) * 1e-6;
    }
    const bool fat_tree = cluster.network.topology == InterNodeTopology::fat_tree;
    auto per_leaf = network->get("nodes_per_leaf");
    auto oversubscription = network->get("oversubscription");
    if (fat_tree) {
      const YamlNode n = (*network)["nodes_per_leaf"];
      cluster.network.nodes_per_leaf = static_cast<int>(n.count(limits::kClusterDevices));
      if (oversubscription) cluster.network.oversubscription = oversubscription->in(limits::kOversubscription);
    } else {
      if (per_leaf) per_leaf->fail("only a fat_tree network has leaf switches");
      if (oversubscription) oversubscription->fail("only a fat_tree network has oversubscribed uplinks");
    }
  }
  return cluster;
}

std::vector<std::string> available_clusters() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(bundled_dir("platforms/clusters"), ec)) {
    const auto ext = entry.path().extension().string();
    if (entry.is_regular_file() && (ext == ".yaml" || ext == ".yml")) names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

Cluster find_cluster(const std::string& name_or_path) {
  if (looks_like_path(name_or_path)) return load_cluster(name_or_path);
  const std::string dir = bundled_dir("platforms/clusters");
  const std::string wanted = lower(name_or_path);
  std::string list;
  for (const auto& name : available_clusters()) {
    if (lower(name) == wanted) {
      for (const char* ext : {".yaml", ".yml"}) {
        const std::string path = dir + "/" + name + ext;
        if (path_exists(path)) return load_cluster(path);
      }
    }
    list += (list.empty() ? "" : ", ") + name;
  }
  throw InputError(name_or_path, 0, "cluster",
                   "unknown cluster '" + name_or_path + "' (bundled: " + (list.empty() ? "none" : list) +
                       "; or give the path of a .yaml file)");
}

}  // namespace tandem
