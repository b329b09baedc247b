#include "sim/platform_builder.hpp"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <stdexcept>

namespace tandem::sim {
namespace s4u = simgrid::s4u;
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

// One node: a FullZone of its devices (and gateway router), with all routes explicit.
BuiltNode build_node(const Cluster& cluster, s4u::NetZone* parent, int group_index, int node,
                     bool needs_gateway, std::vector<s4u::Host*>& hosts) {
  const NodeGroup& group = cluster.groups[group_index];
  const std::string name = node_name(group_index, node);
  const int first_rank = cluster.first_rank(group_index) + node * group.devices_per_node;
  const int count = group.devices_per_node;

  BuiltNode built;
  built.zone = s4u::create_full_zone(name);
  if (parent != nullptr) built.zone->set_parent(parent);

  const std::string idle = number(group.device.idle_power_w);
  const std::string busy = number(group.device.busy_power_w);
  const std::string wattage = idle + ":" + busy + ":" + busy;

  std::vector<s4u::Host*> devices(count);
  std::vector<s4u::Link*> intra(count, nullptr);
  std::vector<s4u::Link*> nic(count, nullptr);
  std::vector<s4u::Link*> loop(count, nullptr);
  // The shared bus (PCIe root complex, memory bus): one link that all traffic through it shares.
  s4u::Link* bus = nullptr;
  const bool bus_used = count > 1 || (needs_gateway && group.fabric == IntraNodeFabric::pcie);
  if (bus_used && group.intra_bus.bandwidth_bytes_per_s > 0) {
    bus = built.zone->create_link(name + "-bus", group.intra_bus.bandwidth_bytes_per_s)
              ->set_latency(group.intra_bus.latency_s);
  }
  if (needs_gateway) built.gateway = built.zone->create_router(name + "-gw");

  for (int d = 0; d < count; ++d) {
    const std::string device = name + "d" + std::to_string(d);
    s4u::Host* host = built.zone->create_host(device, kSimHostSpeedFlopsPerS);
    host->set_core_count(1);
    host->set_property("wattage_per_state", wattage);
    host->set_property("wattage_off", "0");
    host->set_property("rank", std::to_string(first_rank + d));
    devices[d] = host;
    hosts[first_rank + d] = host;

    loop[d] = built.zone->create_link(device + "-loop", group.device.memory_bandwidth_bytes_per_s / 2);
    if (count > 1) {
      intra[d] = built.zone->create_split_duplex_link(device + "-intra", group.intra_link.bandwidth_bytes_per_s)
                     ->set_latency(group.intra_link.latency_s / 2);
    }
    if (needs_gateway) {
      nic[d] = built.zone->create_split_duplex_link(device + "-nic", group.nic.bandwidth_bytes_per_s)
                   ->set_latency(group.nic.latency_s);
    }
  }

  for (int i = 0; i < count; ++i) {
    NetPoint* src = devices[i]->get_netpoint();
    built.zone->add_route(src, src, nullptr, nullptr, {s4u::LinkInRoute(loop[i])}, false);
    for (int j = i + 1; j < count; ++j) {
      std::vector<s4u::LinkInRoute> links{s4u::LinkInRoute(intra[i], Direction::UP)};
      if (bus != nullptr) links.emplace_back(bus);
      links.emplace_back(intra[j], Direction::DOWN);
      // symmetrical: j -> i uses the same links in reverse order with directions swapped
      built.zone->add_route(src, devices[j]->get_netpoint(), nullptr, nullptr, links, true);
    }
    if (needs_gateway) {
      std::vector<s4u::LinkInRoute> links;
      if (bus != nullptr && group.fabric == IntraNodeFabric::pcie) links.emplace_back(bus);
      links.emplace_back(nic[i], Direction::UP);
      built.zone->add_route(src, built.gateway, nullptr, nullptr, links, true);
    }
  }
  built.zone->seal();
  return built;
}

// Adds the nodes [first, end) (global indices) under `zone` (a StarZone), each with its uplink.
void add_nodes(const Cluster& cluster, s4u::NetZone* zone, int first, int end,
               std::vector<s4u::Host*>& hosts) {
  const Seconds half_switch = cluster.network.switch_latency_s / 2;
  int group_index = 0;
  int group_first = 0;
  for (int global = first; global < end; ++global) {
    while (global >= group_first + cluster.groups[group_index].node_count) {
      group_first += cluster.groups[group_index].node_count;
      ++group_index;
    }
    const int node = global - group_first;
    const BuiltNode built = build_node(cluster, zone, group_index, node, true, hosts);
    s4u::Link* uplink = zone->create_split_duplex_link(node_name(group_index, node) + "-uplink",
                                                       cluster.node_uplink_bytes_per_s(global))
                            ->set_latency(half_switch);
    zone->add_route(built.zone->get_netpoint(), nullptr, built.gateway, nullptr,
                    {s4u::LinkInRoute(uplink, Direction::UP)}, true);
  }
}

}  // namespace

const std::vector<std::string>& neutral_network_config() {
  static const std::vector<std::string> settings{"network/latency-factor:1", "network/bandwidth-factor:1",
                                                 "network/crosstraffic:0", "network/TCP-gamma:0"};
  return settings;
}

void use_neutral_network_model() {
  for (const auto& setting : neutral_network_config()) s4u::Engine::set_config(setting);
}

std::string host_name(const Cluster& cluster, int rank) {
  const DeviceLocation loc = cluster.locate(rank);
  return node_name(loc.group, loc.node) + "d" + std::to_string(loc.local);
}

BuiltPlatform build_platform(const Cluster& cluster) {
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

  if (nodes == 1) {
    out.root = build_node(cluster, nullptr, 0, 0, false, out.hosts).zone;
    return out;
  }

  // The first zone created becomes the engine's root.
  out.root = s4u::create_star_zone(cluster.name);
  if (!cluster.has_spine()) {
    add_nodes(cluster, out.root, 0, nodes, out.hosts);
  } else {
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

      add_nodes(cluster, zone, leaf * per_leaf, std::min(nodes, (leaf + 1) * per_leaf), out.hosts);
      zone->seal();

      s4u::Link* uplink = out.root->create_split_duplex_link(name + "-uplink", cluster.leaf_uplink_bytes_per_s(leaf))
                              ->set_latency(cluster.network.switch_latency_s);
      out.root->add_route(zone->get_netpoint(), nullptr, router, nullptr, {s4u::LinkInRoute(uplink, Direction::UP)},
                          true);
    }
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
  return view;
}

}  // namespace tandem::sim
