#include "sim/collectives/schedule.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>
#include <unordered_map>

namespace tandem::sim::collectives {

namespace {

std::uint64_t wire_bytes(Bytes bytes) {
  if (!(bytes >= 0) || !std::isfinite(bytes)) throw std::invalid_argument("collective: negative or non-finite byte count");
  return static_cast<std::uint64_t>(std::llround(bytes));
}

void run_exact(const Phase& phase, PointToPoint& p2p, const std::string& channel) {
  std::vector<simgrid::s4u::CommPtr> comms;
  for (const StepRun& run : phase.runs) {
    comms.reserve(run.sends.size() + run.recvs.size());
    for (int i = 0; i < run.count; ++i) {
      comms.clear();
      for (const Transfer& t : run.recvs) comms.push_back(p2p.recv_async(t.peer, channel));
      for (const Transfer& t : run.sends) comms.push_back(p2p.send_async(t.peer, static_cast<Bytes>(wire_bytes(t.bytes)), channel));
      simgrid::s4u::Comm::wait_all(comms);
    }
  }
}

void run_aggregated(const Phase& phase, int my_rank, PointToPoint& p2p, const std::string& channel,
                    const TopologyView& topology) {
  // One flow per (peer, direction); std::map keeps the posting order deterministic.
  std::map<int, double> send_bytes;
  std::map<int, int> recv_peers;
  for (const StepRun& run : phase.runs) {
    for (const Transfer& t : run.sends) send_bytes[t.peer] += static_cast<double>(wire_bytes(t.bytes)) * run.count;
    for (const Transfer& t : run.recvs) recv_peers[t.peer] += run.count;
  }
  if (send_bytes.empty() && recv_peers.empty()) return;

  const double start = simgrid::s4u::Engine::get_clock();
  std::vector<simgrid::s4u::CommPtr> comms;
  comms.reserve(send_bytes.size() + recv_peers.size());
  Seconds own_latency = 0;
  for (const auto& [peer, count] : recv_peers) {
    (void)count;
    comms.push_back(p2p.recv_async(peer, channel));
    own_latency = std::max(own_latency, edge_latency(topology, peer, my_rank));
  }
  for (const auto& [peer, bytes] : send_bytes) {
    comms.push_back(p2p.send_async(peer, bytes, channel));
    own_latency = std::max(own_latency, edge_latency(topology, my_rank, peer));
  }
  simgrid::s4u::Comm::wait_all(comms);
  const double now = simgrid::s4u::Engine::get_clock();

  const int pace = phase.pace_steps > 0 ? phase.pace_steps : std::max(1, phase.active_steps);
  const Seconds per_step_transfer = std::max(0.0, (now - start) - own_latency) / pace;
  const Seconds latency = phase.latency > 0 ? phase.latency : own_latency;
  const double target = start + phase.span * (latency + per_step_transfer);
  if (target > now) simgrid::s4u::this_actor::sleep_until(target);
}

}  // namespace

void PhaseBuilder::send(int first, int count, int peer, Bytes bytes_per_step) {
  if (count > 0) intervals_.push_back({first, count, peer, bytes_per_step, true});
}

void PhaseBuilder::recv(int first, int count, int peer, Bytes bytes_per_step) {
  if (count > 0) intervals_.push_back({first, count, peer, bytes_per_step, false});
}

Phase PhaseBuilder::build(Seconds latency, int pace_steps) const {
  Phase phase;
  phase.latency = latency;
  // Sweep over the interval boundaries; between two consecutive boundaries the set of active
  // transfers is constant, so that stretch is one run.
  struct Event {
    int step;
    int index;
    bool open;
  };
  std::vector<Event> events;
  events.reserve(intervals_.size() * 2);
  for (int i = 0; i < static_cast<int>(intervals_.size()); ++i) {
    events.push_back({intervals_[i].first, i, true});
    events.push_back({intervals_[i].first + intervals_[i].count, i, false});
  }
  std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    if (a.step != b.step) return a.step < b.step;
    return a.index < b.index;
  });
  std::vector<int> active;  // interval indices, kept sorted (= insertion order of the algorithm)
  std::size_t e = 0;
  while (e < events.size()) {
    const int step = events[e].step;
    for (; e < events.size() && events[e].step == step; ++e) {
      if (events[e].open) {
        active.insert(std::upper_bound(active.begin(), active.end(), events[e].index), events[e].index);
      } else {
        active.erase(std::find(active.begin(), active.end(), events[e].index));
      }
    }
    if (active.empty() || e >= events.size()) continue;
    const int next = events[e].step;
    StepRun run;
    run.first = step;
    run.count = next - step;
    for (int index : active) {
      const Interval& in = intervals_[index];
      (in.is_send ? run.sends : run.recvs).push_back({in.peer, in.bytes});
    }
    phase.active_steps += run.count;
    phase.span = run.first + run.count;
    phase.runs.push_back(std::move(run));
  }
  phase.pace_steps = pace_steps > 0 ? pace_steps : phase.active_steps;
  return phase;
}

void execute(const Schedule& schedule, CollectiveFidelity fidelity, int my_rank, PointToPoint& p2p,
             const std::string& channel, const TopologyView& topology) {
  for (const Phase& phase : schedule.phases) {
    if (fidelity == CollectiveFidelity::aggregated) {
      run_aggregated(phase, my_rank, p2p, channel, topology);
    } else {
      run_exact(phase, p2p, channel);
    }
  }
}

std::int64_t exact_transfer_count(const Schedule& schedule) {
  std::int64_t total = 0;
  for (const Phase& phase : schedule.phases)
    for (const StepRun& run : phase.runs)
      total += static_cast<std::int64_t>(run.count) * static_cast<std::int64_t>(run.sends.size());
  return total;
}

int node_of(const TopologyView& topology, int rank) { return topology.node_of ? topology.node_of(rank) : 0; }

Seconds edge_latency(const TopologyView& topology, int a, int b) {
  const bool same = node_of(topology, a) == node_of(topology, b);
  const auto& f = same ? topology.intra_latency_of : topology.inter_latency_of;
  if (!f) return 0;
  return std::max(f(a), f(b));
}

BytesPerSecond edge_bandwidth(const TopologyView& topology, int a, int b) {
  const bool same = node_of(topology, a) == node_of(topology, b);
  const auto& f = same ? topology.intra_bandwidth_of : topology.inter_bandwidth_of;
  if (!f) return std::numeric_limits<double>::infinity();
  return std::min(f(a), f(b));
}

GroupShape analyze_group(const std::vector<int>& ranks, const TopologyView& topology) {
  GroupShape shape;
  shape.size = static_cast<int>(ranks.size());
  shape.local_index.resize(ranks.size());
  shape.node_slot.resize(ranks.size());
  std::unordered_map<int, int> slot_of;
  for (int i = 0; i < shape.size; ++i) {
    const int node = node_of(topology, ranks[i]);
    auto [it, inserted] = slot_of.emplace(node, static_cast<int>(shape.node_order.size()));
    if (inserted) {
      shape.node_order.push_back(node);
      shape.members.emplace_back();
    }
    shape.node_slot[i] = it->second;
    shape.local_index[i] = static_cast<int>(shape.members[it->second].size());
    shape.members[it->second].push_back(i);
  }
  shape.regular = !shape.members.empty();
  for (const auto& m : shape.members) shape.regular = shape.regular && m.size() == shape.members[0].size();
  shape.per_node = shape.regular ? static_cast<int>(shape.members[0].size()) : 0;

  const double inf = std::numeric_limits<double>::infinity();
  shape.intra_bandwidth = inf;
  shape.inter_bandwidth = inf;
  for (int r : ranks) {
    if (topology.intra_latency_of) shape.intra_latency = std::max(shape.intra_latency, topology.intra_latency_of(r));
    if (topology.inter_latency_of) shape.inter_latency = std::max(shape.inter_latency, topology.inter_latency_of(r));
    if (topology.intra_bandwidth_of) shape.intra_bandwidth = std::min(shape.intra_bandwidth, topology.intra_bandwidth_of(r));
    if (topology.inter_bandwidth_of) shape.inter_bandwidth = std::min(shape.inter_bandwidth, topology.inter_bandwidth_of(r));
  }
  return shape;
}

}  // namespace tandem::sim::collectives
