// A minimal SimGrid harness for the collective algorithms, independent of the rest of the
// simulator: a platform built in code, PointToPoint on mailboxes, one actor per member, and the
// simulated completion time of each collective. Every simulation runs in a forked child
// (tests/sim/sim_test_support.hpp), since SimGrid allows one engine per process.
//
// Platforms:
//   nodes == 1 — a star: one split-duplex link per host (latency `intra_link_latency_s`,
//                bandwidth `intra_bandwidth`); host-to-host route = 2 links.
//   nodes  > 1 — a full zone: inside a node the route is [intra link of src UP, intra link of
//                dst DOWN]; across nodes [NIC of src UP, NIC of dst DOWN], with one NIC per
//                device (rails, DGX-like) or one per node shared by its devices.
// `replicas` > 1 builds that many disjoint copies (ranks r + k·hosts() for copy k, no route
// between copies), so independent cases run side by side in one simulation without touching.
// The network factors are neutral (latency and bandwidth factors 1, no cross-traffic, no
// TCP-gamma), so a lone transfer takes exactly latency + bytes / bandwidth.
#pragma once

#include <simgrid/s4u.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/collectives/collective.hpp"
#include "sim/collectives/mailbox_p2p.hpp"
#include "tests/sim/sim_test_support.hpp"

namespace tandem::sim_test::collectives {

using sim::CollectiveAlgorithm;
using sim::CollectiveFidelity;

struct PlatformSpec {
  int nodes = 1;
  int per_node = 8;
  BytesPerSecond intra_bandwidth = 100e9;  // per link direction
  Seconds intra_link_latency_s = 1e-6;     // per link; a route has two
  BytesPerSecond nic_bandwidth = 12.5e9;
  Seconds nic_link_latency_s = 2.5e-6;
  bool shared_nic = false;  // one NIC per node instead of one per device
  int replicas = 1;

  int hosts() const { return nodes * per_node; }  // per replica
  Seconds intra_route_latency() const { return 2 * intra_link_latency_s; }
  Seconds inter_route_latency() const { return 2 * nic_link_latency_s; }

  static PlatformSpec star(int hosts, BytesPerSecond bandwidth, Seconds link_latency_s) {
    PlatformSpec spec;
    spec.nodes = 1;
    spec.per_node = hosts;
    spec.intra_bandwidth = bandwidth;
    spec.intra_link_latency_s = link_latency_s;
    return spec;
  }
  static PlatformSpec two_level(int nodes, int per_node, BytesPerSecond intra, BytesPerSecond nic,
                                bool shared_nic = false) {
    PlatformSpec spec;
    spec.nodes = nodes;
    spec.per_node = per_node;
    spec.intra_bandwidth = intra;
    spec.nic_bandwidth = nic;
    spec.shared_nic = shared_nic;
    return spec;
  }
};

inline sim::TopologyView topology_of(const PlatformSpec& spec) {
  sim::TopologyView view;
  const int per_node = spec.per_node;
  view.node_of = [per_node](int rank) { return rank / per_node; };
  view.intra_bandwidth_of = [spec](int) { return spec.intra_bandwidth; };
  view.intra_latency_of = [spec](int) { return spec.intra_route_latency(); };
  // A shared NIC is reported at its full speed: what one device alone gets from it.
  view.inter_bandwidth_of = [spec](int) { return spec.nic_bandwidth; };
  view.inter_latency_of = [spec](int) { return spec.inter_route_latency(); };
  return view;
}

// One collective: its members (global ranks = host indices) all start it at `start_s`.
struct Job {
  OpKind kind = OpKind::all_reduce;
  Bytes bytes = 0;
  std::vector<int> ranks;
  int root = 0;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::ring;
  CollectiveFidelity fidelity = CollectiveFidelity::exact;
  std::string channel = "c0";
  Seconds start_s = 0;
};

struct Outcome {
  bool ok = false;
  std::string error;
  std::vector<Seconds> end_s;        // per job: when its last member finished
  std::vector<Seconds> first_end_s;  // per job: when its first member finished
  double wall_s = 0;                 // wall-clock time of the simulation in the child
  Seconds duration(std::size_t job = 0) const { return end_s.at(job); }
};

inline std::vector<int> iota_ranks(int n, int first = 0, int stride = 1) {
  std::vector<int> ranks(n);
  for (int i = 0; i < n; ++i) ranks[i] = first + i * stride;
  return ranks;
}

namespace detail {

using MailboxP2P = sim::MailboxPointToPoint;

inline void build_platform(const PlatformSpec& spec, std::vector<simgrid::s4u::Host*>& hosts) {
  namespace s4u = simgrid::s4u;
  using Dir = s4u::LinkInRoute::Direction;
  const int per_replica = spec.hosts();
  const int n = per_replica * spec.replicas;
  hosts.resize(n);
  if (spec.nodes == 1) {
    auto* zone = s4u::create_star_zone("world");
    for (int i = 0; i < n; ++i) {
      hosts[i] = zone->create_host("h" + std::to_string(i), 1e12);
      auto* link = zone->create_split_duplex_link("l" + std::to_string(i), spec.intra_bandwidth);
      link->set_latency(spec.intra_link_latency_s);
      link->seal();
      zone->add_route(hosts[i]->get_netpoint(), nullptr, nullptr, nullptr, {s4u::LinkInRoute(link, Dir::UP)}, true);
    }
    zone->seal();
    return;
  }
  auto* zone = s4u::create_full_zone("world");
  std::vector<s4u::Link*> intra(n);
  std::vector<s4u::Link*> nic(spec.shared_nic ? spec.nodes * spec.replicas : n);
  for (int i = 0; i < n; ++i) {
    hosts[i] = zone->create_host("h" + std::to_string(i), 1e12);
    intra[i] = zone->create_split_duplex_link("nv" + std::to_string(i), spec.intra_bandwidth);
    intra[i]->set_latency(spec.intra_link_latency_s);
    intra[i]->seal();
  }
  for (std::size_t k = 0; k < nic.size(); ++k) {
    nic[k] = zone->create_split_duplex_link("nic" + std::to_string(k), spec.nic_bandwidth);
    nic[k]->set_latency(spec.nic_link_latency_s);
    nic[k]->seal();
  }
  auto node = [&](int r) { return r / spec.per_node; };
  auto nic_of = [&](int r) { return spec.shared_nic ? nic[node(r)] : nic[r]; };
  for (int a = 0; a < n; ++a) {
    const int first = a / per_replica * per_replica;
    for (int b = first; b < first + per_replica; ++b) {
      if (a == b) continue;
      std::vector<s4u::LinkInRoute> route;
      if (node(a) == node(b)) {
        route = {s4u::LinkInRoute(intra[a], Dir::UP), s4u::LinkInRoute(intra[b], Dir::DOWN)};
      } else {
        route = {s4u::LinkInRoute(nic_of(a), Dir::UP), s4u::LinkInRoute(nic_of(b), Dir::DOWN)};
      }
      zone->add_route(hosts[a]->get_netpoint(), hosts[b]->get_netpoint(), nullptr, nullptr, route, false);
    }
  }
  zone->seal();
}

}  // namespace detail

// Runs the jobs concurrently on the platform, in a child process.
inline Outcome simulate(const PlatformSpec& spec, const std::vector<Job>& jobs) {
  auto result = run_in_child([&]() -> std::string {
    namespace s4u = simgrid::s4u;
    const auto wall_start = std::chrono::steady_clock::now();
    s4u::Engine engine("collective_test");
    quiet_simgrid();
    s4u::Engine::set_config("network/latency-factor:1");
    s4u::Engine::set_config("network/bandwidth-factor:1");
    s4u::Engine::set_config("network/crosstraffic:0");
    s4u::Engine::set_config("network/TCP-gamma:0");
    s4u::Engine::set_config("contexts/stack-size:256");
    std::vector<s4u::Host*> hosts;
    detail::build_platform(spec, hosts);
    const sim::TopologyView topology = topology_of(spec);

    std::vector<Seconds> last(jobs.size(), 0.0);
    std::vector<Seconds> first(jobs.size(), 1e300);
    for (std::size_t j = 0; j < jobs.size(); ++j) {
      const Job& job = jobs[j];
      for (int me = 0; me < static_cast<int>(job.ranks.size()); ++me) {
        const int rank = job.ranks[me];
        if (rank < 0 || rank >= static_cast<int>(hosts.size())) throw std::invalid_argument("rank outside the platform");
        s4u::Actor::create("r" + std::to_string(rank) + "j" + std::to_string(j), hosts[rank],
                           [&job, &topology, &last, &first, j, me, rank] {
                             if (job.start_s > 0) s4u::this_actor::sleep_until(job.start_s);
                             sim::CollectiveCall call;
                             call.kind = job.kind;
                             call.bytes = job.bytes;
                             call.ranks = job.ranks;
                             call.me = me;
                             call.root = job.root;
                             call.channel = job.channel;
                             detail::MailboxP2P p2p(rank);
                             sim::run_collective(call, job.algorithm, job.fidelity, p2p, topology);
                             const Seconds now = s4u::Engine::get_clock();
                             last[j] = std::max(last[j], now);
                             first[j] = std::min(first[j], now);
                           });
      }
    }
    engine.run();
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
    std::ostringstream out;
    out.precision(17);
    out << wall;
    for (std::size_t j = 0; j < jobs.size(); ++j) out << ' ' << last[j] << ' ' << first[j];
    return out.str();
  });
  Outcome outcome;
  if (!result.ok) {
    outcome.error = result.describe();
    return outcome;
  }
  std::istringstream in(result.output);
  in >> outcome.wall_s;
  outcome.end_s.resize(jobs.size());
  outcome.first_end_s.resize(jobs.size());
  for (std::size_t j = 0; j < jobs.size(); ++j) in >> outcome.end_s[j] >> outcome.first_end_s[j];
  outcome.ok = static_cast<bool>(in);
  if (!outcome.ok) outcome.error = "unparsable child output: " + result.output;
  return outcome;
}

inline Outcome simulate_one(const PlatformSpec& spec, const Job& job) { return simulate(spec, std::vector<Job>{job}); }

inline double relative_error(double value, double reference) { return std::abs(value - reference) / reference; }

}  // namespace tandem::sim_test::collectives
