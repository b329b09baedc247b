// Collectives in the simulator are the real algorithms, decomposed into point-to-point
// transfers on the modeled links, so contention between concurrent flows comes from
// SimGrid's network model. Each algorithm exists in two fidelities:
//   exact      — every step of the algorithm is its own transfer (what NCCL does, chunk by chunk);
//   aggregated — one flow per edge of the algorithm carrying the edge's total bytes, with the
//                per-step latencies added; agrees with `exact` within 1% where both apply and
//                scales to thousands of ranks.
// One file per algorithm (ring.cpp, tree.cpp, hierarchical.cpp, ...), all sharing this interface.
#pragma once

#include <simgrid/s4u.hpp>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/units.hpp"
#include "sim/collectives/nccl_model.hpp"
#include "strategies/op.hpp"

namespace tandem::sim {

// nvls: NVLink SHARP (Hopper NVSwitch nodes, all-reduce within a node; sim/collectives/nvls.cpp).
enum class CollectiveAlgorithm { automatic, ring, tree, hierarchical, direct, nvls };
enum class CollectiveFidelity { automatic, exact, aggregated };
const char* to_string(CollectiveAlgorithm algorithm);
const char* to_string(CollectiveFidelity fidelity);
CollectiveAlgorithm parse_collective_algorithm(const std::string& text);  // std::invalid_argument
CollectiveFidelity parse_collective_fidelity(const std::string& text);

// One member's view of one collective call.
struct CollectiveCall {
  OpKind kind = OpKind::all_reduce;  // all_reduce, reduce_scatter, all_gather, broadcast, all_to_all
  Bytes bytes = 0;                   // nccl-tests convention (full buffer size)
  std::vector<int> ranks;            // global ranks of the group, in ring order
  int me = 0;                        // my index in `ranks`
  int root = 0;                      // index in `ranks` (broadcast)
  std::string channel;               // same on all members; distinguishes concurrent collectives
  bool userbuffers = false;          // Transformer Engine's userbuffers, not NCCL's kernels (strategies/runtime.hpp)
};

// How the calling actor moves bytes to and from peers. Implemented by the sim runtime with
// mailboxes; a collective may keep many transfers in flight and wait on them together. A receive
// names the bytes the peer sends: a peer that is not simulated (a folded replica) has no actor
// to send them, so the runtime moves them itself.
class PointToPoint {
 public:
  virtual ~PointToPoint() = default;
  virtual simgrid::s4u::CommPtr send_async(int dst_rank, Bytes bytes, const std::string& channel) = 0;
  virtual simgrid::s4u::CommPtr recv_async(int src_rank, Bytes bytes, const std::string& channel) = 0;
};

// What algorithm choice needs to know about where ranks sit and how fast links are.
struct TopologyView {
  std::function<int(int)> node_of;  // global rank -> global node index
  // Per-device port figures (the slowest among the group's members is used for choices).
  std::function<BytesPerSecond(int)> intra_bandwidth_of;
  std::function<Seconds(int)> intra_latency_of;   // one-way, device to device in a node
  std::function<BytesPerSecond(int)> inter_bandwidth_of;
  std::function<Seconds(int)> inter_latency_of;   // one-way, device to device across nodes
  // NCCL's view of a device's node (optional; null or absent: no NCCL model, the links' figures
  // are taken as achievable). With it, the tuner follows NCCL's (nccl_model.hpp) and each
  // collective's flows carry NCCL's protocol and link efficiency and per-step latency
  // (nccl_flows.cpp). sim/collectives/nccl_fabric.hpp builds it from a cluster's node group.
  std::function<const nccl::Fabric*(int)> nccl_fabric_of;
};

// The choice NCCL's tuner makes. With an NCCL fabric (TopologyView::nccl_fabric_of), NCCL's own
// tuner (nccl_model.hpp: ring, tree, NVLS, CollNet as hierarchical); without, an alpha-beta
// estimate of each algorithm on this topology: tree for small messages over many nodes, ring for
// large ones, hierarchical when the group spans several nodes with several members each.
CollectiveAlgorithm choose_algorithm(OpKind kind, Bytes bytes, const std::vector<int>& ranks,
                                     const TopologyView& topology);
// `automatic` fidelity: exact while the number of transfers stays small, aggregated above.
CollectiveFidelity choose_fidelity(CollectiveAlgorithm algorithm, OpKind kind, int group_size);

// What a point-to-point transfer (pipeline send/recv) of `payload` bytes from rank a to rank b
// puts on the modeled links: the payload over NCCL's achievable fraction of the edge (NVLink:
// links x NCCL's per-link rate over the line rate; a NIC: NCCL's channel speed over its rate),
// so that the flow takes payload / achievable bandwidth. The payload itself without an NCCL fabric.
Bytes point_to_point_wire_bytes(const TopologyView& topology, int a, int b, Bytes payload);

// NCCL's choice for a collective on a group and its time from the model alone, without flows
// (an analytic path, where no contention is possible: a group within one node); `algorithm`
// other than automatic fixes NCCL's algorithm (hierarchical: CollNet). nullopt when the group has
// no NCCL fabric.
std::optional<nccl::Estimate> nccl_estimate(OpKind kind, Bytes bytes, const std::vector<int>& ranks,
                                            const TopologyView& topology,
                                            CollectiveAlgorithm algorithm = CollectiveAlgorithm::automatic);

// Runs one member's part of the collective from the calling actor; returns when this member's
// part is done (as NCCL's kernel on that rank would).
void run_collective(const CollectiveCall& call, CollectiveAlgorithm algorithm,
                    CollectiveFidelity fidelity, PointToPoint& p2p, const TopologyView& topology);

}  // namespace tandem::sim
