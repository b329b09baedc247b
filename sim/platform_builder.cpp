#include "sim/platform_builder.hpp"

#include <simgrid/kernel/routing/NetZoneImpl.hpp>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <stdexcept>

#include "sim/collectives/nccl_fabric.hpp"

namespace tandem::sim {
namespace s4u = simgrid::s4u;
namespace kernel = simgrid::kernel;
using simgrid::kernel::routing::NetPoint;
using Direction = s4u::LinkInRoute::Direction;

namespace {

std::string number(double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.15g", value);
  return buffer;
}

std::string node_name(int group, int node) { return "g" + std::to_string(group) + "n" + std::to_string(node); }

struct BuiltNode {
  s4u::NetZone* zone = nullptr;
  NetPoint* gateway = nullptr;  // nullptr in a single-node cluster
};

// A node's links. They are all created up front, in the root zone, before any child zone exists:
// SimGrid 3.32 checks a new link's name against every zone of the tree, so creating links zone
// by zone costs O(zones) each and the build O(n^2) (1.3 s instead of 0.3 s at 4096 devices).
// Which zone owns a link does not matter to routing.
struct NodeLinks {
  std::vector<s4u::Link*> intra;  // per device, split-duplex (nullptr with one device per node)
  std::vector<s4u::Link*> nic;    // per NIC, split-duplex (none in a single-node cluster); device d uses
                                  // nic[d / devices_per_nic]: devices sharing a NIC share its bandwidth
  std::vector<s4u::Link*> loop;   // per device: a copy to itself
  s4u::Link* bus = nullptr;       // shared: PCIe root complex, memory bus
  s4u::Link* uplink = nullptr;    // into the (leaf) switch, split-duplex; multi-node clusters only
  std::vector<s4u::Link*> pcie;   // node hosts only: per device, its link to the host, split-duplex
  s4u::Link* host_latency = nullptr;  // node hosts only: the device link's latency, host routes only
};

NodeLinks create_node_links(const Cluster& cluster, s4u::NetZone* owner, int group_index, int node,
                            int global_node, bool multi_node, bool node_hosts) {
  const NodeGroup& group = cluster.groups[group_index];
  const std::string name = node_name(group_index, node);
  const int count = group.devices_per_node;
  NodeLinks links;
  links.intra.assign(count, nullptr);
  links.loop.assign(count, nullptr);
  const bool bus_used = count > 1 || (multi_node && group.fabric == IntraNodeFabric::pcie);
  if (bus_used && group.intra_bus.bandwidth_bytes_per_s > 0) {
    links.bus = owner->create_link(name + "-bus", group.intra_bus.bandwidth_bytes_per_s)
                    ->set_latency(group.intra_bus.latency_s);
  }
  for (int d = 0; d < count; ++d) {
    const std::string device = name + "d" + std::to_string(d);
    links.loop[d] = owner->create_link(device + "-loop", group.device.memory_bandwidth_bytes_per_s / 2);
    if (count > 1) {
      // Half the device-to-device latency on each port: a route crosses two.
      links.intra[d] = owner->create_split_duplex_link(device + "-intra", group.intra_link.bandwidth_bytes_per_s)
                           ->set_latency(group.intra_link.latency_s / 2);
    }
  }
  if (multi_node) {
    for (int k = 0; k < group.nic_count(); ++k)
      links.nic.push_back(owner->create_split_duplex_link(name + "nic" + std::to_string(k), group.nic.bandwidth_bytes_per_s)
                              ->set_latency(group.nic.latency_s));
  }
  if (node_hosts) {
    if (!group.host.given())
      throw std::invalid_argument("node group '" + group.name + "' of cluster '" + cluster.name +
                                  "' does not describe its host (node_groups[].host): offloading needs its memory, "
                                  "its memory bandwidth and each device's link to it");
    // The PCIe link carries no latency of its own: a NIC's measured latency already includes
    // its crossing; copies to the host add the link's latency on a link of their own.
    for (int d = 0; d < count; ++d)
      links.pcie.push_back(owner->create_split_duplex_link(name + "d" + std::to_string(d) + "-pcie",
                                                           group.host.device_link.bandwidth_bytes_per_s));
    links.host_latency = owner->create_link(name + "-host-latency", 1e15)->set_latency(group.host.device_link.latency_s);
  }
  if (multi_node) {
    // Half a switch latency on each node's uplink: node -> switch -> node crosses two.
    links.uplink = owner->create_split_duplex_link(name + "-uplink", cluster.node_uplink_bytes_per_s(global_node))
                       ->set_latency(cluster.network.switch_latency_s / 2);
  }
  return links;
}

// Gives `zone`, not yet in the tree, the models of `parent` (as set_parent will).
void use_models_of(const s4u::NetZone* parent, s4u::NetZone* zone) {
  const kernel::routing::NetZoneImpl* from = parent->get_impl();
  kernel::routing::NetZoneImpl* to = zone->get_impl();
  to->set_network_model(from->get_network_model());
  to->set_cpu_pm_model(from->get_cpu_pm_model());
  to->set_cpu_vm_model(from->get_cpu_vm_model());
  to->set_disk_model(from->get_disk_model());
  to->set_host_model(from->get_host_model());
}

// One node: a FullZone of its devices (and gateway router), with all routes explicit. With a
// parent, the zone is left out of the tree (attach_node puts it in).
BuiltNode build_node(const Cluster& cluster, s4u::NetZone* parent, int group_index, int node,
                     const NodeLinks& links, std::vector<s4u::Host*>& hosts, s4u::Host** node_host) {
  const NodeGroup& group = cluster.groups[group_index];
  const std::string name = node_name(group_index, node);
  const int first_rank = cluster.first_rank(group_index) + node * group.devices_per_node;
  const int count = group.devices_per_node;
  const bool needs_gateway = links.uplink != nullptr;

  BuiltNode built;
  built.zone = parent == nullptr ? s4u::Engine::get_instance()->get_netzone_root() : s4u::create_full_zone(name);
  // The node's zone joins the tree only once its hosts exist: SimGrid 3.32 checks a new host's name
  // against every zone of the tree, so creating hosts in attached zones costs O(zones) each and the
  // platform O(n^2) (38% of a 16,384-GPU simulation). Meanwhile it uses its parent's models.
  if (parent != nullptr) use_models_of(parent, built.zone);
  if (needs_gateway) built.gateway = built.zone->create_router(name + "-gw");

  const std::string idle = number(group.device.idle_power_w);
  const std::string busy = number(group.device.busy_power_w);
  const std::string wattage = idle + ":" + busy + ":" + busy;

  // Devices sharing the node's cores compute on one multi-core host (see the header).
  s4u::Host* cores = nullptr;
  if (group.shared_cores > 0) {
    cores = built.zone->create_host(name + "-cores", kSimHostSpeedFlopsPerS);
    cores->set_core_count(group.shared_cores);
    cores->set_property(kBackgroundLoadProperty, number(group.background_load));
  }
  std::vector<s4u::Host*> devices(count);
  for (int d = 0; d < count; ++d) {
    s4u::Host* host = built.zone->create_host(name + "d" + std::to_string(d), kSimHostSpeedFlopsPerS);
    host->set_core_count(1);
    host->set_property("wattage_per_state", wattage);
    host->set_property("wattage_off", "0");
    host->set_property("rank", std::to_string(first_rank + d));
    if (cores != nullptr) host->set_property(kComputeHostProperty, cores->get_name());
    devices[d] = host;
    hosts[first_rank + d] = host;
  }
  // The node's host: one core running executions priced in seconds of its memory bandwidth.
  s4u::Host* cpu = nullptr;
  if (!links.pcie.empty()) {
    cpu = built.zone->create_host(name + "-host", kSimHostSpeedFlopsPerS);
    cpu->set_core_count(1);
    *node_host = cpu;
  }

  for (int i = 0; i < count; ++i) {
    NetPoint* src = devices[i]->get_netpoint();
    built.zone->add_route(src, src, nullptr, nullptr, {s4u::LinkInRoute(links.loop[i])}, false);
    for (int j = i + 1; j < count; ++j) {
      std::vector<s4u::LinkInRoute> route{s4u::LinkInRoute(links.intra[i], Direction::UP)};
      if (links.bus != nullptr) route.emplace_back(links.bus);
      route.emplace_back(links.intra[j], Direction::DOWN);
      // symmetrical: j -> i takes the same links in reverse order, directions swapped
      built.zone->add_route(src, devices[j]->get_netpoint(), nullptr, nullptr, route, true);
    }
    if (cpu != nullptr)
      built.zone->add_route(src, cpu->get_netpoint(), nullptr, nullptr,
                            {s4u::LinkInRoute(links.pcie[i], Direction::UP), s4u::LinkInRoute(links.host_latency)}, true);
    if (needs_gateway) {
      std::vector<s4u::LinkInRoute> route;
      if (!links.pcie.empty()) route.emplace_back(links.pcie[i], Direction::UP);
      if (links.bus != nullptr && group.fabric == IntraNodeFabric::pcie) route.emplace_back(links.bus);
      route.emplace_back(links.nic[i / group.devices_per_nic()], Direction::UP);
      built.zone->add_route(src, built.gateway, nullptr, nullptr, route, true);
    }
  }
  if (parent == nullptr) built.zone->seal();  // a single-node cluster: the node is the platform
  return built;
}

// Builds every node (global index) out of the tree, then attaches each to its zone (a StarZone:
// the root, or its leaf) with its uplink: every host exists before any node joins the tree (see
// build_node), so the platform is built in time linear in its size.
void add_nodes(const Cluster& cluster, const std::vector<s4u::NetZone*>& zone_of_node, const std::vector<NodeLinks>& links,
               std::vector<s4u::Host*>& hosts, std::vector<s4u::Host*>& node_hosts) {
  std::vector<BuiltNode> built;
  built.reserve(zone_of_node.size());
  for (int g = 0, global = 0; g < static_cast<int>(cluster.groups.size()); ++g)
    for (int n = 0; n < cluster.groups[g].node_count; ++n, ++global)
      built.push_back(build_node(cluster, zone_of_node[global], g, n, links[global], hosts, &node_hosts[global]));
  for (std::size_t global = 0; global < built.size(); ++global) {
    s4u::NetZone* zone = zone_of_node[global];
    built[global].zone->set_parent(zone);
    built[global].zone->seal();
    zone->add_route(built[global].zone->get_netpoint(), nullptr, built[global].gateway, nullptr,
                    {s4u::LinkInRoute(links[global].uplink, Direction::UP)}, true);
  }
}

}  // namespace

const std::vector<std::string>& neutral_network_config() {
  static const std::vector<std::string> settings{"network/latency-factor:1", "network/bandwidth-factor:1",
                                                 "network/crosstraffic:0", "network/TCP-gamma:1e300"};
  return settings;
}

void use_neutral_network_model() {
  for (const auto& setting : neutral_network_config()) s4u::Engine::set_config(setting);
}

std::string host_name(const Cluster& cluster, int rank) {
  const DeviceLocation loc = cluster.locate(rank);
  return node_name(loc.group, loc.node) + "d" + std::to_string(loc.local);
}

BuiltPlatform build_platform(const Cluster& cluster, const StorageEndpoint* storage, bool node_hosts) {
  if (!s4u::Engine::is_initialized()) throw std::logic_error("build_platform: create the s4u::Engine first");
  s4u::Engine* engine = s4u::Engine::get_instance();
  if (engine->get_netzone_root() != nullptr) {
    throw std::logic_error("build_platform: the engine already has a platform (one per process)");
  }
  if (cluster.groups.empty() || cluster.device_count() <= 0) {
    throw std::logic_error("build_platform: cluster '" + cluster.name + "' has no devices");
  }

  BuiltPlatform out;
  out.hosts.assign(cluster.device_count(), nullptr);
  const int nodes = cluster.node_count();
  out.node_hosts.assign(node_hosts ? nodes : 0, nullptr);
  s4u::Host* unused = nullptr;

  if (nodes == 1 && storage != nullptr)
    throw std::logic_error("build_platform: a storage endpoint needs a multi-node cluster");
  if (nodes == 1) {
    out.root = s4u::create_full_zone(node_name(0, 0));  // the first zone created becomes the root
    const NodeLinks links = create_node_links(cluster, out.root, 0, 0, 0, false, node_hosts);
    build_node(cluster, nullptr, 0, 0, links, out.hosts, node_hosts ? &out.node_hosts[0] : &unused);
    return out;
  }

  out.root = s4u::create_star_zone(cluster.name);  // the first zone created becomes the root
  // Every link first, while the root has no children (see NodeLinks).
  std::vector<NodeLinks> links;
  links.reserve(nodes);
  for (int g = 0, global = 0; g < static_cast<int>(cluster.groups.size()); ++g) {
    for (int n = 0; n < cluster.groups[g].node_count; ++n, ++global) {
      links.push_back(create_node_links(cluster, out.root, g, n, global, true, node_hosts));
    }
  }
  s4u::Link* storage_link = nullptr;
  if (storage != nullptr)
    storage_link = out.root->create_split_duplex_link("storage-link", storage->bandwidth_bytes_per_s)
                       ->set_latency(storage->latency_s);
  std::vector<s4u::Link*> leaf_uplinks;
  if (cluster.has_spine()) {
    for (int leaf = 0; leaf < cluster.leaf_count(); ++leaf) {
      leaf_uplinks.push_back(
          out.root->create_split_duplex_link("leaf" + std::to_string(leaf) + "-uplink", cluster.leaf_uplink_bytes_per_s(leaf))
              ->set_latency(cluster.network.switch_latency_s));
    }
  }

  // Each node's zone: the root, or its leaf's StarZone (with the leaf's switch as gateway).
  std::vector<s4u::NetZone*> zone_of_node(nodes, out.root);
  std::vector<std::pair<s4u::NetZone*, NetPoint*>> leaves;  // zone, switch
  if (cluster.has_spine()) {
    const int per_leaf = cluster.network.nodes_per_leaf;
    for (int leaf = 0; leaf < cluster.leaf_count(); ++leaf) {
      const std::string name = "leaf" + std::to_string(leaf);
      s4u::NetZone* zone = s4u::create_star_zone(name);
      zone->set_parent(out.root);
      // The leaf's gateway: a router in a zone of its own. (A router placed directly in the leaf's
      // StarZone loses the first hop of routes that end at it in SimGrid 3.32.)
      s4u::NetZone* switch_zone = s4u::create_full_zone(name + "-switch");
      switch_zone->set_parent(zone);
      NetPoint* router = switch_zone->create_router(name + "-sw");
      switch_zone->seal();
      zone->add_route(switch_zone->get_netpoint(), nullptr, router, nullptr, {}, true);
      leaves.emplace_back(zone, router);
      for (int n = leaf * per_leaf; n < std::min(nodes, (leaf + 1) * per_leaf); ++n) zone_of_node[n] = zone;
    }
  }
  std::vector<s4u::Host*> built_hosts(nodes, nullptr);
  add_nodes(cluster, zone_of_node, links, out.hosts, built_hosts);
  if (node_hosts) out.node_hosts = built_hosts;
  for (std::size_t leaf = 0; leaf < leaves.size(); ++leaf) {
    auto [zone, router] = leaves[leaf];
    zone->seal();
    out.root->add_route(zone->get_netpoint(), nullptr, router, nullptr,
                        {s4u::LinkInRoute(leaf_uplinks[leaf], Direction::UP)}, true);
  }
  if (storage_link != nullptr) {
    s4u::NetZone* zone = s4u::create_full_zone("storage");
    zone->set_parent(out.root);
    out.storage = zone->create_host("storage", kSimHostSpeedFlopsPerS);
    zone->seal();
    out.root->add_route(zone->get_netpoint(), nullptr, out.storage->get_netpoint(), nullptr,
                        {s4u::LinkInRoute(storage_link, Direction::UP)}, true);
  }
  out.root->seal();
  return out;
}

TopologyView topology_view(const Cluster& cluster) {
  auto shared = std::make_shared<const Cluster>(cluster);
  const bool single_node = cluster.node_count() == 1;
  const int worst_hops = single_node ? 0 : (cluster.has_spine() ? 3 : 1);

  auto intra_bw = [shared](int rank) -> BytesPerSecond {
    const NodeGroup& g = shared->group_of(rank);
    if (g.devices_per_node == 1) return 0;
    BytesPerSecond bw = g.intra_link.bandwidth_bytes_per_s;
    if (g.intra_bus.bandwidth_bytes_per_s > 0) bw = std::min(bw, g.intra_bus.bandwidth_bytes_per_s);
    return bw;
  };
  auto intra_latency = [shared](int rank) -> Seconds {
    const NodeGroup& g = shared->group_of(rank);
    return g.intra_link.latency_s + (g.intra_bus.bandwidth_bytes_per_s > 0 ? g.intra_bus.latency_s : 0.0);
  };
  auto inter_bw = [shared, single_node, intra_bw](int rank) -> BytesPerSecond {
    if (single_node) return intra_bw(rank);
    const NodeGroup& g = shared->group_of(rank);
    BytesPerSecond bw = g.nic.bandwidth_bytes_per_s;
    if (g.fabric == IntraNodeFabric::pcie && g.intra_bus.bandwidth_bytes_per_s > 0) {
      bw = std::min(bw, g.intra_bus.bandwidth_bytes_per_s);
    }
    return bw;
  };
  auto inter_latency = [shared, single_node, worst_hops, intra_latency](int rank) -> Seconds {
    if (single_node) return intra_latency(rank);
    const NodeGroup& g = shared->group_of(rank);
    Seconds latency = 2 * g.nic.latency_s + worst_hops * shared->network.switch_latency_s;
    if (g.fabric == IntraNodeFabric::pcie && g.intra_bus.bandwidth_bytes_per_s > 0) latency += 2 * g.intra_bus.latency_s;
    return latency;
  };

  TopologyView view;
  view.node_of = [shared](int rank) { return shared->global_node_of(rank); };
  // One device per node: nothing moves inside a node; report the network port instead.
  view.intra_bandwidth_of = [shared, intra_bw, inter_bw](int rank) {
    return shared->group_of(rank).devices_per_node == 1 ? inter_bw(rank) : intra_bw(rank);
  };
  view.intra_latency_of = [shared, intra_latency, inter_latency](int rank) {
    return shared->group_of(rank).devices_per_node == 1 ? inter_latency(rank) : intra_latency(rank);
  };
  view.inter_bandwidth_of = inter_bw;
  view.inter_latency_of = inter_latency;
  // Groups whose cluster states an NVLink generation run their collectives and pipeline
  // send/recv at NCCL's achievable rates and latencies (sim/collectives/nccl_model.hpp).
  view.nccl_fabric_of = nccl_fabric_lookup(cluster);
  return view;
}

}  // namespace tandem::sim
