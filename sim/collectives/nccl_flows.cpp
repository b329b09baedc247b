// NCCL's protocol and link efficiency on the simulated flows (algorithms.hpp: WireModel). The
// collective still runs as its algorithm's transfers on the modeled links, so contention between
// concurrent collectives is simulated; what changes is what each transfer costs a link:
//   bytes   payload / efficiency, the efficiency of an edge class being the achievable rate NCCL
//           reaches on it with the chosen protocol over the link's nominal rate (ring Simple on
//           NVLink 4: 18 x 20.6 GB/s over 450 GB/s; LL halves the payload per line; ...);
//   latency each step waits NCCL's per-step latency beyond the route's, so that the steps add up
//           to NCCL's latency (base + hardware latency per step, nccl_model.cpp).
#include <algorithm>
#include <cmath>

#include "sim/collectives/algorithms.hpp"

namespace tandem::sim::collectives {

nccl::Algorithm nccl_algorithm_of(CollectiveAlgorithm algorithm) {
  switch (algorithm) {
    case CollectiveAlgorithm::tree: return nccl::Algorithm::tree;
    case CollectiveAlgorithm::nvls: return nccl::Algorithm::nvls;
    case CollectiveAlgorithm::hierarchical: return nccl::Algorithm::collnet_chain;
    default: return nccl::Algorithm::ring;
  }
}

CollectiveAlgorithm collective_algorithm_of(nccl::Algorithm algorithm) {
  switch (algorithm) {
    case nccl::Algorithm::tree: return CollectiveAlgorithm::tree;
    case nccl::Algorithm::nvls: return CollectiveAlgorithm::nvls;
    case nccl::Algorithm::collnet_direct:
    case nccl::Algorithm::collnet_chain: return CollectiveAlgorithm::hierarchical;
    case nccl::Algorithm::ring: break;
  }
  return CollectiveAlgorithm::ring;
}

std::optional<WireModel> nccl_wire_model(const CollectiveCall& call, CollectiveAlgorithm algorithm,
                                         const GroupShape& shape) {
  if (!shape.nccl || shape.size < 2) return std::nullopt;
  const nccl::Fabric& f = *shape.nccl;
  const nccl::Placement group{shape.size, std::max(1, shape.nodes())};
  // The protocol NCCL picks for this algorithm (an algorithm NCCL would not run here, such as the
  // direct forms, is timed as NCCL's ring would move its bytes: Simple, at the links' rates).
  nccl::Estimate chosen = nccl::tuner_choice(call.kind, call.bytes, f, group, nccl_algorithm_of(algorithm));
  if (!chosen.available()) chosen = nccl::tuner_choice(call.kind, call.bytes, f, group, nccl::Algorithm::ring);
  const bool nccl_kernels = !call.userbuffers;
  const nccl::Estimate real =
      nccl::achievable(call.kind, call.bytes, f, group, chosen.algorithm, chosen.protocol, nccl_kernels);
  if (!real.available()) return std::nullopt;
  WireModel wire;
  wire.estimate = real;
  const BytesPerSecond intra_nominal = shape.intra_bandwidth;
  const BytesPerSecond inter_nominal = shape.inter_bandwidth;
  if (algorithm == CollectiveAlgorithm::nvls) {
    // The flows put S(1 + 1/n) through each port (nvls.cpp); NCCL moves S at the NVLS rate.
    if (intra_nominal > 0 && std::isfinite(intra_nominal))
      wire.efficiency[0] = real.alg_bytes_per_s * (1.0 + 1.0 / shape.size) / intra_nominal;
  } else if (algorithm == CollectiveAlgorithm::tree || algorithm == CollectiveAlgorithm::hierarchical) {
    // These schedules are not NCCL's own (a double binary tree over all members rather than
    // NCCL's chain in a node and tree across nodes; a hierarchical ring for CollNet): their
    // transfers at the links' nominal rates (the schedule's alpha-beta estimate, latencies
    // zeroed) are scaled, on every edge alike, to take NCCL's transfer time.
    GroupShape no_latency = shape;
    no_latency.intra_latency = no_latency.inter_latency = 0;
    const Seconds nominal_s = algorithm == CollectiveAlgorithm::tree
                                  ? tree_estimate(call.kind, call.bytes, no_latency)
                                  : hierarchical_estimate(call.kind, call.bytes, no_latency);
    const Seconds target_s = call.bytes / real.alg_bytes_per_s;
    if (std::isfinite(nominal_s) && nominal_s > 0 && target_s > 0)
      wire.efficiency[0] = wire.efficiency[1] = nominal_s / target_s;
  } else {
    // The protocol's share of the Simple ring's bus bandwidth, on each class's achievable rate.
    // Both estimates are of the same form, so the mid-size slowdown cancels in the share and is
    // applied once, to the intra-node links it was measured on.
    const nccl::Estimate simple = nccl::achievable(call.kind, call.bytes, f, group, nccl::Algorithm::ring,
                                                   nccl::Protocol::simple, nccl_kernels);
    const double protocol_share = simple.available() ? std::min(1.0, real.bus_bytes_per_s / simple.bus_bytes_per_s) : 1.0;
    const double slowdown = nccl_kernels ? nccl::mid_size_slowdown(call.kind, call.bytes, f, group) : 1.0;
    if (intra_nominal > 0 && std::isfinite(intra_nominal))
      wire.efficiency[0] = protocol_share * f.intra_bytes_per_s() / intra_nominal / slowdown;
    if (inter_nominal > 0 && std::isfinite(inter_nominal) && f.nic_bytes_per_s > 0)
      wire.efficiency[1] = protocol_share * f.nic_achievable_bytes_per_s() / inter_nominal;
  }
  for (double& e : wire.efficiency)
    if (!(e > 0) || !std::isfinite(e)) e = 1.0;
  // NCCL's latency spread over the steps on the collective's critical path, less what the routes
  // already charge per step.
  int steps = 1;
  switch (algorithm) {
    case CollectiveAlgorithm::tree: steps = tree_steps(call.kind, shape.size, call.bytes); break;
    case CollectiveAlgorithm::hierarchical:
      steps = hierarchical_applies(call.kind, shape) ? hierarchical_steps(call.kind, shape)
                                                     : ring_steps(call.kind, shape.size, call.bytes);
      break;
    case CollectiveAlgorithm::nvls: steps = 1; break;
    case CollectiveAlgorithm::direct: steps = direct_steps(call.kind, shape.size); break;
    default: steps = ring_steps(call.kind, shape.size, call.bytes); break;
  }
  const Seconds route = shape.spans_nodes() ? std::max(shape.intra_latency, shape.inter_latency) : shape.intra_latency;
  wire.step_overhead_s = std::max(0.0, real.latency_s / std::max(1, steps) - route);
  return wire;
}

void apply_wire_model(Schedule& schedule, int my_rank, const WireModel& wire, const TopologyView& topology) {
  for (Phase& phase : schedule.phases) {
    phase.step_overhead = wire.step_overhead_s;
    for (StepRun& run : phase.runs) {
      for (Transfer& t : run.sends) t.bytes /= wire.efficiency[node_of(topology, my_rank) == node_of(topology, t.peer) ? 0 : 1];
      for (Transfer& t : run.recvs) t.bytes /= wire.efficiency[node_of(topology, my_rank) == node_of(topology, t.peer) ? 0 : 1];
    }
  }
}

}  // namespace tandem::sim::collectives

namespace tandem::sim {

Bytes point_to_point_wire_bytes(const TopologyView& topology, int a, int b, Bytes payload) {
  if (!topology.nccl_fabric_of) return payload;
  const nccl::Fabric* fa = topology.nccl_fabric_of(a);
  const nccl::Fabric* fb = topology.nccl_fabric_of(b);
  if (fa == nullptr || fb == nullptr) return payload;
  const bool same_node = collectives::node_of(topology, a) == collectives::node_of(topology, b);
  const BytesPerSecond nominal = collectives::edge_bandwidth(topology, a, b);
  const BytesPerSecond achievable = std::min(nccl::predict_send_recv(payload, *fa, same_node).alg_bytes_per_s,
                                             nccl::predict_send_recv(payload, *fb, same_node).alg_bytes_per_s);
  if (!(achievable > 0) || !(nominal > 0) || !std::isfinite(nominal)) return payload;
  return payload * nominal / achievable;
}

std::optional<nccl::Estimate> nccl_estimate(OpKind kind, Bytes bytes, const std::vector<int>& ranks,
                                            const TopologyView& topology, CollectiveAlgorithm algorithm) {
  const collectives::GroupShape shape = collectives::analyze_group(ranks, topology);
  if (!shape.nccl || shape.size < 1) return std::nullopt;
  const nccl::Placement placement{shape.size, std::max(1, shape.nodes())};
  if (algorithm == CollectiveAlgorithm::automatic) return nccl::predict(kind, bytes, *shape.nccl, placement);
  const nccl::Estimate chosen =
      nccl::tuner_choice(kind, bytes, *shape.nccl, placement, collectives::nccl_algorithm_of(algorithm));
  const nccl::Estimate real = nccl::achievable(kind, bytes, *shape.nccl, placement, chosen.algorithm, chosen.protocol);
  return real.available() ? real : chosen;
}

}  // namespace tandem::sim
