#include "sim/reliability/straggler.hpp"

#include <simgrid/kernel/ProfileBuilder.hpp>

#include <cstdio>
#include <stdexcept>

#include "sim/platform_builder.hpp"

namespace tandem::sim::reliability {

namespace s4u = simgrid::s4u;

namespace {

// The link a straggler's traffic leaves by: on the route to a rank of another node, the first
// link named as a NIC ("nic"); within a one-node cluster, its intra-node port ("intra"). Found
// on the route rather than rebuilt from names, so that devices sharing a NIC find the NIC they
// share. Both directions of the split-duplex link are scaled.
void scale_link_towards(const Cluster& cluster, const std::vector<s4u::Host*>& hosts, int rank, double fraction) {
  const bool multi_node = cluster.node_count() > 1;
  const s4u::Host* peer = nullptr;
  for (int r = 0; r < static_cast<int>(hosts.size()) && peer == nullptr; ++r)
    if (r != rank && (!multi_node || !cluster.same_node(r, rank))) peer = hosts[r];
  if (peer == nullptr)
    throw std::invalid_argument("rank " + std::to_string(rank) + " has no peer to talk to: no link to slow");
  std::vector<s4u::Link*> route;
  hosts[rank]->route_to(peer, route, nullptr);
  const std::string kind = multi_node ? "nic" : "intra";
  for (s4u::Link* link : route) {
    const std::string name = link->get_name();
    if (name.find(kind) == std::string::npos || !name.ends_with("_UP")) continue;
    s4u::Link* down = s4u::Link::by_name_or_null(name.substr(0, name.size() - 3) + "_DOWN");
    for (s4u::Link* side : {link, down})
      if (side != nullptr) side->set_bandwidth(side->get_bandwidth() * fraction);
    return;
  }
  throw std::logic_error("straggler: no " + kind + " link on rank " + std::to_string(rank) + "'s route");
}

}  // namespace

void apply_stragglers(const std::vector<Straggler>& stragglers, const Cluster& cluster,
                      const std::vector<s4u::Host*>& hosts) {
  for (const Straggler& s : stragglers) {
    if (s.rank < 0 || s.rank >= static_cast<int>(hosts.size()))
      throw std::invalid_argument("straggler rank " + std::to_string(s.rank) + " is not a simulated rank");
    s4u::Host* host = hosts[s.rank];
    if (s.compute_slowdown != 1) {
      // The slowdown itself, for the kernels the device plays on its own timeline (on shared
      // cores: for as long as it holds one, which is all a slower rank there can be), and a speed
      // profile (its value scales the host's peak from time 0 on) for anything executed there.
      char text[64];
      std::snprintf(text, sizeof text, "%.17g", s.compute_slowdown);
      host->set_property(kComputeSlowdownProperty, text);
      if (host->get_property(kComputeHostProperty) == nullptr) {
        std::snprintf(text, sizeof text, "0 %.17g\n", 1.0 / s.compute_slowdown);
        host->set_speed_profile(
            simgrid::kernel::profile::ProfileBuilder::from_string("straggler-" + host->get_name(), text, -1));
      }
    }
    if (s.network_bandwidth_fraction != 1) scale_link_towards(cluster, hosts, s.rank, s.network_bandwidth_fraction);
  }
}

}  // namespace tandem::sim::reliability
