// Dispatch: names, fidelity choice and run_collective. The algorithms live in ring.cpp,
// tree.cpp, hierarchical.cpp and direct.cpp; the step machinery both fidelities share in
// schedule.cpp; the tuner in choose.cpp.
#include "sim/collectives/collective.hpp"

#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <tuple>
#include <unordered_map>

#include "sim/collectives/algorithms.hpp"

namespace tandem::sim {

namespace collectives {

namespace {

bool is_collective_kind(OpKind kind) {
  return kind == OpKind::all_reduce || kind == OpKind::reduce_scatter || kind == OpKind::all_gather ||
         kind == OpKind::broadcast || kind == OpKind::all_to_all;
}

// Steps on one member's critical path; hierarchical needs the group's shape.
std::int64_t critical_steps(CollectiveAlgorithm algorithm, OpKind kind, Bytes bytes, int n, const GroupShape* shape) {
  switch (algorithm) {
    case CollectiveAlgorithm::tree: return tree_steps(kind, n, bytes);
    case CollectiveAlgorithm::direct: return direct_steps(kind, n);
    case CollectiveAlgorithm::nvls: return 1;
    case CollectiveAlgorithm::hierarchical:
      if (shape != nullptr && hierarchical_applies(kind, *shape)) return hierarchical_steps(kind, *shape);
      [[fallthrough]];  // bounded by the ring's count
    default:
      return kind == OpKind::all_to_all ? direct_steps(kind, n) : ring_steps(kind, n, bytes);
  }
}

// ---- the replayed lockstep durations used by the aggregated form, cached per collective shape ----

// Members' transfers a replay may cost before the aggregated form falls back to its closed form.
std::int64_t replay_budget = 4'000'000;

struct ReplayKey {
  CollectiveAlgorithm algorithm;
  OpKind kind;
  Bytes bytes;
  int root;
  std::vector<int> ranks;
  std::vector<int> nodes;  // node of each member
  std::vector<double> figures;  // the first member's latencies and bandwidths
  const TopologyView* topology;
  bool operator<(const ReplayKey& o) const {
    return std::tie(algorithm, kind, bytes, root, topology, ranks, nodes, figures) <
           std::tie(o.algorithm, o.kind, o.bytes, o.root, o.topology, o.ranks, o.nodes, o.figures);
  }
};

using Durations = std::vector<std::vector<PhaseModel>>;

std::shared_ptr<const Durations> replayed_durations(const CollectiveCall& call, CollectiveAlgorithm algorithm,
                                                    const GroupShape& shape, const TopologyView& topology) {
  const int n = static_cast<int>(call.ranks.size());
  const std::int64_t estimate = critical_steps(algorithm, call.kind, call.bytes, n, &shape) * std::int64_t{n} * 3;
  if (estimate > replay_budget) return nullptr;

  ReplayKey key{algorithm, call.kind, call.bytes, call.kind == OpKind::broadcast ? call.root : 0, call.ranks, {}, {}, &topology};
  key.nodes.reserve(n);
  for (int r : call.ranks) key.nodes.push_back(node_of(topology, r));
  const int r0 = call.ranks.front();
  for (const auto* f : {&topology.intra_latency_of, &topology.inter_latency_of}) key.figures.push_back(*f ? (*f)(r0) : 0.0);
  for (const auto* f : {&topology.intra_bandwidth_of, &topology.inter_bandwidth_of}) key.figures.push_back(*f ? (*f)(r0) : 0.0);

  static std::mutex mutex;
  static std::map<ReplayKey, std::shared_ptr<const Durations>> cache;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = cache.find(key); it != cache.end()) return it->second;

  std::vector<Schedule> members;
  members.reserve(n);
  CollectiveCall other = call;
  const std::optional<WireModel> wire = nccl_wire_model(call, algorithm, shape);
  for (int g = 0; g < n; ++g) {
    other.me = g;
    members.push_back(build_schedule(other, algorithm, shape, topology, /*phase_latency=*/false));
    if (wire) apply_wire_model(members.back(), call.ranks[g], *wire, topology);
  }
  auto durations = std::make_shared<const Durations>(replay(members, call.ranks, topology));
  if (cache.size() >= 256) cache.erase(cache.begin());
  cache.emplace(std::move(key), durations);
  return durations;
}

}  // namespace

std::int64_t set_replay_budget(std::int64_t transfers) {
  const std::int64_t previous = replay_budget;
  replay_budget = transfers;
  return previous;
}

CollectiveAlgorithm effective_algorithm(CollectiveAlgorithm requested, OpKind kind, const GroupShape& shape) {
  if (kind == OpKind::all_to_all) return CollectiveAlgorithm::direct;
  switch (requested) {
    case CollectiveAlgorithm::automatic: return effective_algorithm(choose_for_shape(kind, 0, shape), kind, shape);
    case CollectiveAlgorithm::tree: return tree_supports(kind) ? requested : CollectiveAlgorithm::ring;
    case CollectiveAlgorithm::hierarchical:
      return hierarchical_applies(kind, shape) ? requested : CollectiveAlgorithm::ring;
    case CollectiveAlgorithm::nvls: return nvls_applies(kind, shape) ? requested : CollectiveAlgorithm::ring;
    default: return requested;
  }
}

CollectiveFidelity fidelity_for(CollectiveAlgorithm algorithm, OpKind kind, Bytes bytes, const GroupShape& shape) {
  const std::int64_t n = shape.size;
  const std::int64_t transfers = critical_steps(algorithm, kind, bytes, shape.size, &shape) * n;
  return transfers <= kExactTransferLimit ? CollectiveFidelity::exact : CollectiveFidelity::aggregated;
}

Schedule build_schedule(const CollectiveCall& call, CollectiveAlgorithm algorithm, const GroupShape& shape,
                        const TopologyView& topology, bool phase_latency) {
  switch (algorithm) {
    case CollectiveAlgorithm::tree: return tree_schedule(call, topology, phase_latency);
    case CollectiveAlgorithm::hierarchical: return hierarchical_schedule(call, shape, topology, phase_latency);
    case CollectiveAlgorithm::direct: return direct_schedule(call, topology, phase_latency);
    case CollectiveAlgorithm::nvls: return nvls_schedule(call, topology, phase_latency);
    case CollectiveAlgorithm::ring:
      if (rail_ring_applies(call.kind, shape)) return rail_ring_schedule(call, shape, topology, phase_latency);
      return ring_schedule(call, topology, phase_latency);
    case CollectiveAlgorithm::automatic: break;
  }
  throw std::logic_error("build_schedule: algorithm must be resolved first");
}

}  // namespace collectives

CollectiveFidelity choose_fidelity(CollectiveAlgorithm algorithm, OpKind kind, int group_size) {
  // Without the message size, assume the longest pipeline (most chunks), so that a large message
  // never lands on a slow exact form; without the group's shape, hierarchical counts as the ring
  // it is bounded by. run_collective with `automatic` decides with the actual size instead.
  const Bytes largest = collectives::kChunkBytes * collectives::kMaxChunks * 2;
  const std::int64_t steps = collectives::critical_steps(algorithm, kind, largest, group_size, nullptr);
  return steps * group_size <= collectives::kExactTransferLimit ? CollectiveFidelity::exact
                                                                 : CollectiveFidelity::aggregated;
}

namespace {
// Every member of a collective needs its group's shape, which depends only on the members: it is
// computed once per channel (a group on a stream) and shared, instead of O(n) work per member
// (O(n^2) per collective). One engine per process, so one cache per simulation.
const collectives::GroupShape& shared_group_shape(const CollectiveCall& call, const TopologyView& topology) {
  struct Entry {
    const TopologyView* topology;
    std::vector<int> ranks;
    collectives::GroupShape shape;
  };
  static std::unordered_map<std::string, Entry> cache;
  auto it = cache.find(call.channel);
  // Group ids are unique per member set; size and ends guard against a reused channel name.
  if (it == cache.end() || it->second.topology != &topology || it->second.ranks.size() != call.ranks.size() ||
      it->second.ranks.front() != call.ranks.front() || it->second.ranks.back() != call.ranks.back()) {
    Entry entry{&topology, call.ranks, collectives::analyze_group(call.ranks, topology)};
    it = cache.insert_or_assign(call.channel, std::move(entry)).first;
  }
  return it->second.shape;
}
}  // namespace

void run_collective(const CollectiveCall& call, CollectiveAlgorithm algorithm, CollectiveFidelity fidelity,
                    PointToPoint& p2p, const TopologyView& topology) {
  using namespace collectives;
  if (!is_collective_kind(call.kind))
    throw std::invalid_argument(std::string("run_collective: not a collective: ") + to_string(call.kind));
  const int n = static_cast<int>(call.ranks.size());
  if (call.me < 0 || call.me >= n) throw std::invalid_argument("run_collective: `me` outside the group");
  if (call.kind == OpKind::broadcast && (call.root < 0 || call.root >= n))
    throw std::invalid_argument("run_collective: broadcast root outside the group");
  if (!(call.bytes >= 0)) throw std::invalid_argument("run_collective: negative byte count");
  if (n <= 1) return;

  // The group's full shape costs O(n); the ring, tree and direct algorithms do not need it.
  GroupShape plain;
  plain.size = n;
  const bool needs_shape = algorithm == CollectiveAlgorithm::automatic ||
                           algorithm == CollectiveAlgorithm::hierarchical || bool(topology.nccl_fabric_of);
  const GroupShape& shape = needs_shape ? shared_group_shape(call, topology) : plain;
  CollectiveAlgorithm chosen = algorithm == CollectiveAlgorithm::automatic
                                   ? choose_for_shape(call.kind, call.bytes, shape)
                                   : algorithm;
  chosen = effective_algorithm(chosen, call.kind, shape);
  if (fidelity == CollectiveFidelity::automatic) fidelity = fidelity_for(chosen, call.kind, call.bytes, shape);

  std::shared_ptr<const std::vector<std::vector<PhaseModel>>> modeled;
  if (fidelity == CollectiveFidelity::aggregated) modeled = replayed_durations(call, chosen, shape, topology);
  // The phases' group-wide latency scan (O(n)) only serves the aggregated closed form.
  const bool phase_latency = fidelity == CollectiveFidelity::aggregated && !modeled;
  Schedule schedule = build_schedule(call, chosen, shape, topology, phase_latency);
  const std::optional<WireModel> wire = nccl_wire_model(call, chosen, shape);
  if (wire) apply_wire_model(schedule, call.ranks[call.me], *wire, topology);
  const double start = simgrid::s4u::Engine::get_clock();
  execute(schedule, fidelity, call.ranks[call.me], p2p, call.channel, topology,
          modeled ? &(*modeled)[call.me] : nullptr);
  // NCCL's time is the floor: the ring's and NVLS's flows reproduce it when alone, but the tree
  // and hierarchical schedules are not NCCL's own and may run ahead of it; other traffic still
  // makes any of them later. (All-to-all is point-to-point in NCCL, outside its tuner.)
  if (wire && call.kind != OpKind::all_to_all && start + wire->estimate.seconds > simgrid::s4u::Engine::get_clock())
    simgrid::s4u::this_actor::sleep_until(start + wire->estimate.seconds);
}

}  // namespace tandem::sim
