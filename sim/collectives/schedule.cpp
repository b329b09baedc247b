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
      if (phase.step_overhead > 0) simgrid::s4u::this_actor::sleep_for(phase.step_overhead);
      comms.clear();
      for (const Transfer& t : run.recvs) comms.push_back(p2p.recv_async(t.peer, static_cast<Bytes>(wire_bytes(t.bytes)), channel));
      for (const Transfer& t : run.sends) comms.push_back(p2p.send_async(t.peer, static_cast<Bytes>(wire_bytes(t.bytes)), channel));
      simgrid::s4u::Comm::wait_all(comms);
    }
  }
}

// Transfers to a peer on the same node and to one on another node use different ports; the
// aggregated form paces each class of edges separately.
int edge_class(const TopologyView& topology, int a, int b) { return node_of(topology, a) == node_of(topology, b) ? 0 : 1; }

void run_aggregated(const Phase& phase, const PhaseModel* modeled, int my_rank, PointToPoint& p2p, const std::string& channel,
                    const TopologyView& topology) {
  // One flow per (peer, lane, direction); std::map keeps the posting order deterministic and the
  // same on both ends of an edge.
  std::map<std::pair<int, int>, double> send_bytes;
  std::map<std::pair<int, int>, double> recv_bytes;
  int class_steps[2] = {0, 0};  // steps in which a class of edges carries something
  for (const StepRun& run : phase.runs) {
    bool used[2] = {false, false};
    for (const Transfer& t : run.sends) {
      send_bytes[{t.peer, t.lane}] += static_cast<double>(wire_bytes(t.bytes)) * run.count;
      used[edge_class(topology, my_rank, t.peer)] = true;
    }
    for (const Transfer& t : run.recvs) {
      recv_bytes[{t.peer, t.lane}] += static_cast<double>(wire_bytes(t.bytes)) * run.count;
      used[edge_class(topology, t.peer, my_rank)] = true;
    }
    for (int k = 0; k < 2; ++k)
      if (used[k]) class_steps[k] += run.count;
  }
  if (send_bytes.empty() && recv_bytes.empty()) return;

  const double start = simgrid::s4u::Engine::get_clock();
  std::vector<simgrid::s4u::CommPtr> comms;
  std::vector<int> comm_class;
  std::vector<Seconds> comm_latency;
  comms.reserve(send_bytes.size() + recv_bytes.size());
  for (const auto& [edge, bytes] : recv_bytes) {
    const int peer = edge.first;
    comms.push_back(p2p.recv_async(peer, bytes, channel));
    comm_class.push_back(edge_class(topology, peer, my_rank));
    comm_latency.push_back(edge_latency(topology, peer, my_rank));
  }
  for (const auto& [edge, bytes] : send_bytes) {
    const int peer = edge.first;
    comms.push_back(p2p.send_async(peer, bytes, channel));
    comm_class.push_back(edge_class(topology, my_rank, peer));
    comm_latency.push_back(edge_latency(topology, my_rank, peer));
  }
  // When each flow finished (one wait_all for many flows: they then all count as finishing last).
  std::vector<double> finish(comms.size(), 0.0);
  if (comms.size() <= 64) {
    std::vector<simgrid::s4u::CommPtr> pending = comms;
    std::vector<std::size_t> index(comms.size());
    for (std::size_t i = 0; i < index.size(); ++i) index[i] = i;
    while (!pending.empty()) {
      const auto done = static_cast<std::size_t>(simgrid::s4u::Comm::wait_any(pending));
      finish[index[done]] = simgrid::s4u::Engine::get_clock();
      pending.erase(pending.begin() + static_cast<std::ptrdiff_t>(done));
      index.erase(index.begin() + static_cast<std::ptrdiff_t>(done));
    }
  } else {
    simgrid::s4u::Comm::wait_all(comms);
    std::fill(finish.begin(), finish.end(), simgrid::s4u::Engine::get_clock());
  }
  const double now = simgrid::s4u::Engine::get_clock();

  // Transfer time per step: per class, the flows' time beyond one latency spread over the steps
  // that class is busy (capped by the builder's pace); the slower class sets the pace.
  Seconds own_latency = 0;
  Seconds per_step_transfer = 0;
  for (int k = 0; k < 2; ++k) {
    double last = start;
    Seconds latency = 0;
    for (std::size_t i = 0; i < comms.size(); ++i) {
      if (comm_class[i] != k) continue;
      last = std::max(last, finish[i]);
      latency = std::max(latency, comm_latency[i]);
    }
    own_latency = std::max(own_latency, latency);
    const int steps = std::min(class_steps[k], phase.pace_steps > 0 ? phase.pace_steps : class_steps[k]);
    if (steps > 0) per_step_transfer = std::max(per_step_transfer, std::max(0.0, last - start - latency) / steps);
  }
  const Seconds latency = phase.latency > 0 ? phase.latency : own_latency;
  double target;
  if (modeled != nullptr) {
    // The replayed lockstep time, plus whatever the flows took beyond what the replay expected
    // of them (traffic of other collectives, sharing the view does not show); at least the flows
    // plus the latencies of the remaining steps.
    const int pace = std::max(1, phase.pace_steps);
    const Seconds extra = std::max(0.0, (now - start) - modeled->flows);
    target = std::max(start + modeled->lockstep + extra, now + (pace - 1) * (latency + phase.step_overhead));
  } else {
    const int pace = std::min(phase.span, std::max(1, phase.pace_steps));
    target = start + phase.span * (latency + phase.step_overhead) +
             (pace + phase.fill_share * (phase.span - pace)) * per_step_transfer;
  }
  if (target > now) simgrid::s4u::this_actor::sleep_until(target);
}

}  // namespace

void execute(const Schedule& schedule, CollectiveFidelity fidelity, int my_rank, PointToPoint& p2p,
             const std::string& channel, const TopologyView& topology, const std::vector<PhaseModel>* modeled) {
  for (std::size_t i = 0; i < schedule.phases.size(); ++i) {
    const Phase& phase = schedule.phases[i];
    if (fidelity == CollectiveFidelity::aggregated) {
      const PhaseModel* model = modeled != nullptr && i < modeled->size() ? &(*modeled)[i] : nullptr;
      run_aggregated(phase, model, my_rank, p2p, channel, topology);
    } else {
      run_exact(phase, p2p, channel);
    }
  }
}

std::vector<std::vector<PhaseModel>> replay(const std::vector<Schedule>& members, const std::vector<int>& ranks,
                                            const TopologyView& topology) {
  const int n = static_cast<int>(members.size());
  std::unordered_map<int, int> index_of;
  for (int g = 0; g < n; ++g) index_of.emplace(ranks[g], g);
  auto index = [&](int rank) {
    const auto it = index_of.find(rank);
    if (it == index_of.end()) throw std::logic_error("replay: peer outside the group");
    return it->second;
  };
  const std::size_t phases = members.empty() ? 0 : members[0].phases.size();
  std::vector<std::vector<PhaseModel>> models(n, std::vector<PhaseModel>(phases));

  // Ports: (member, class, direction) -> 4 per member.
  auto port = [](int g, int k, bool out) { return 4 * static_cast<std::size_t>(g) + 2 * k + (out ? 1 : 0); };
  struct Flow {
    double begin;
    int src, dst, k;
    Bytes bytes;
    Seconds latency;
    BytesPerSecond bandwidth;
  };
  std::vector<double> now(n), step_start(n), step_end(n), port_free(4 * static_cast<std::size_t>(n));
  std::vector<std::size_t> run_at(n);
  std::vector<int> active;
  std::vector<const StepRun*> active_run(n, nullptr);
  std::vector<Flow> flows;
  for (std::size_t p = 0; p < phases; ++p) {
    int span = 0;
    for (int g = 0; g < n; ++g) {
      if (members[g].phases.size() != phases) throw std::logic_error("replay: members disagree on phases");
      span = std::max(span, members[g].phases[p].span);
    }

    // The lockstep form, step by step.
    std::fill(now.begin(), now.end(), 0.0);
    std::fill(run_at.begin(), run_at.end(), 0);
    std::fill(port_free.begin(), port_free.end(), 0.0);
    for (int s = 0; s < span; ++s) {
      active.clear();
      for (int g = 0; g < n; ++g) {
        const auto& runs = members[g].phases[p].runs;
        std::size_t& r = run_at[g];
        while (r < runs.size() && runs[r].first + runs[r].count <= s) ++r;
        if (r < runs.size() && runs[r].first <= s) {
          active.push_back(g);
          active_run[g] = &runs[r];
          step_start[g] = step_end[g] = now[g];
        }
      }
      flows.clear();
      for (int g : active) {
        for (const Transfer& t : active_run[g]->sends) {
          const int q = index(t.peer);
          // Both ends wait out the step's protocol overhead before the transfer starts.
          const double begin = std::max(step_start[g], step_start[q]) + members[g].phases[p].step_overhead;
          flows.push_back({begin, g, q, edge_class(topology, ranks[g], t.peer), t.bytes,
                           edge_latency(topology, ranks[g], t.peer), edge_bandwidth(topology, ranks[g], t.peer)});
        }
      }
      // Each port serves its transfers one after the other in the order they start (the last
      // one ends when it would under fair sharing); a transfer ends when both its ports are done.
      std::stable_sort(flows.begin(), flows.end(), [](const Flow& a, const Flow& b) { return a.begin < b.begin; });
      for (const Flow& f : flows) {
        const double data_start = f.begin + f.latency;
        double& out = port_free[port(f.src, f.k, true)];
        double& in = port_free[port(f.dst, f.k, false)];
        out = std::max(out, data_start) + f.bytes / f.bandwidth;
        in = std::max(in, data_start) + f.bytes / f.bandwidth;
        const double end = std::max(out, in);
        step_end[f.src] = std::max(step_end[f.src], end);
        step_end[f.dst] = std::max(step_end[f.dst], end);
      }
      for (int g : active) now[g] = step_end[g];
    }
    for (int g = 0; g < n; ++g) models[g][p].lockstep = now[g];

    // The aggregated form: every edge's bytes in one flow, all together; a flow lasts its
    // latency plus the bytes through the busier of its two ports over the bandwidth.
    std::vector<double> total(4 * static_cast<std::size_t>(n), 0.0);
    for (int g = 0; g < n; ++g)
      for (const StepRun& run : members[g].phases[p].runs)
        for (const Transfer& t : run.sends) {
          const int k = edge_class(topology, ranks[g], t.peer);
          total[port(g, k, true)] += t.bytes * run.count;
          total[port(index(t.peer), k, false)] += t.bytes * run.count;
        }
    for (int g = 0; g < n; ++g) {
      double longest = 0;
      for (const StepRun& run : members[g].phases[p].runs) {
        for (const Transfer& t : run.sends) {
          const int k = edge_class(topology, ranks[g], t.peer);
          const double load = std::max(total[port(g, k, true)], total[port(index(t.peer), k, false)]);
          longest = std::max(longest, edge_latency(topology, ranks[g], t.peer) + load / edge_bandwidth(topology, ranks[g], t.peer));
        }
        for (const Transfer& t : run.recvs) {
          const int k = edge_class(topology, t.peer, ranks[g]);
          const double load = std::max(total[port(index(t.peer), k, true)], total[port(g, k, false)]);
          longest = std::max(longest, edge_latency(topology, t.peer, ranks[g]) + load / edge_bandwidth(topology, t.peer, ranks[g]));
        }
      }
      models[g][p].flows = longest;
    }
  }
  return models;
}

}  // namespace tandem::sim::collectives
