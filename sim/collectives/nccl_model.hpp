// NCCL as a pure function: given a collective, its size and the group's fabric, which algorithm,
// protocol and channel count NCCL's tuner picks, the bus bandwidth NCCL reaches with them, and
// the time. No SimGrid: the flow-level collectives (run_collective) use it to set the per-step
// latency and the achievable fraction of each link, and an analytic path may use it directly.
//
// Two sides, kept apart on purpose:
//   tuner      — NCCL's own cost model (src/graph/tuning.cc: base + per-step hardware latencies,
//                per-protocol bandwidth caps; the channel search of src/graph/search.cc), used only
//                to CHOOSE, as NCCL does: it is known to misestimate (NVLS on 8 H100: 320 GB/s in
//                the tuner, ~480 measured), but its choice is what a real run gets;
//   achievable — what the choice really reaches: NCCL's per-link NVLink rate (topo.h: 20.0 GB/s
//                per NVLink on Volta/Ampere, 20.6 on Hopper, 40.1 on Blackwell), NCCL's per-NIC rate
//                (search.cc's inter-node speeds: 24 GB/s on HDR, 48 on NDR, as NVIDIA's engineers
//                report on nccl-tests issues), the same per-protocol caps, and NVLS's efficiency.
// Constants come from NVIDIA/nccl at commit 5067397 (2026-06); nccl_constants.cpp lists them.
#pragma once

#include <string>

#include "common/units.hpp"
#include "strategies/op.hpp"

namespace tandem::sim::nccl {

// NCCL's compute-capability classes (tuning.cc: NCCL_*_COMPCAP_IDX).
enum class Arch { volta, ampere, hopper, blackwell };
enum class Algorithm { ring, tree, nvls, collnet_direct, collnet_chain };
enum class Protocol { ll, ll128, simple };
const char* to_string(Arch arch);
const char* to_string(Algorithm algorithm);
const char* to_string(Protocol protocol);

// What NCCL's topology detection finds on every node of the group (nodes alike).
struct Fabric {
  Arch arch = Arch::ampere;
  bool nvlink = true;                // GPUs joined by NVLink (else PCIe)
  int nvlinks_per_gpu = 0;           // NVLink: links from each GPU (into the NVSwitches)
  bool nvswitch = false;             // NVLink through NVSwitches (NVLS on Hopper and later)
  BytesPerSecond pcie_bytes_per_s = 0;  // PCIe: the per-GPU rate NCCL assumes (PCI_BW, 12 GB/s Gen3)
  BytesPerSecond nic_bytes_per_s = 0;   // one NIC's nominal rate, per direction
  int nics_per_node = 0;
  bool amd_host = false;             // multi-node LL caps depend on the CPU vendor (tuning.cc llMaxBws)
  bool collnet = false;              // in-network reduction (IB SHARP) enabled

  // NCCL's achievable rate of one GPU's intra-node links together (NVLink: links x per-link
  // rate), per direction.
  BytesPerSecond intra_bytes_per_s() const;
  // NCCL's achievable rate of one NIC (the fastest inter-node channel speed it fits).
  BytesPerSecond nic_achievable_bytes_per_s() const;
  bool operator==(const Fabric&) const = default;
};

// Where the group's members sit: `ranks` members over `nodes` nodes, the same number on each.
struct Placement {
  int ranks = 1;
  int nodes = 1;
  int per_node() const { return nodes > 0 ? ranks / nodes : ranks; }
};

// One (algorithm, protocol) on one collective.
struct Estimate {
  Algorithm algorithm = Algorithm::ring;
  Protocol protocol = Protocol::simple;
  int channels = 1;
  BytesPerSecond bus_bytes_per_s = 0;  // nccl-tests busbw (0: NCCL would not run this combination)
  BytesPerSecond alg_bytes_per_s = 0;  // bytes / transfer time
  Seconds latency_s = 0;               // fixed part: base + per-step hardware latencies
  Seconds seconds = 0;                 // latency + bytes / alg bandwidth (+inf when not run)
  bool available() const { return bus_bytes_per_s > 0; }
};

// NCCL's tuner's estimate (what it compares to choose), and the choice itself: the fastest
// available (algorithm, protocol) by that estimate; ties keep NCCL's order (tree, ring, ...,
// LL, LL128, Simple). Kinds: all_reduce, reduce_scatter, all_gather, broadcast (send/recv and
// all-to-all have no algorithm choice: ring, Simple).
Estimate tuner_estimate(OpKind kind, Bytes bytes, const Fabric& fabric, const Placement& group, Algorithm algorithm,
                        Protocol protocol);
Estimate tuner_choice(OpKind kind, Bytes bytes, const Fabric& fabric, const Placement& group);
// The same choice with the algorithm fixed (the best protocol for it).
Estimate tuner_choice(OpKind kind, Bytes bytes, const Fabric& fabric, const Placement& group, Algorithm algorithm);

// What NCCL really reaches with an (algorithm, protocol): the tuner's latency, and the bus
// bandwidth of the achievable link rates through the same protocol caps; the whole time then
// stretched by mid_size_slowdown.
// `measured_mid_size` false: the affine form alone (a collective that NCCL's kernels do not move).
Estimate achievable(OpKind kind, Bytes bytes, const Fabric& fabric, const Placement& group, Algorithm algorithm,
                    Protocol protocol, bool measured_mid_size = true);
// How much longer NCCL takes on one NVSwitch node than the affine form (latency + bytes / bus
// bandwidth) says at this size: the measured-over-modelled time of that node's 8-GPU all-reduce
// sweep (nccl_sweeps.hpp) at the same bytes per rank, over the same ratio at the sweep's plateau
// (the plateau is the bus-bandwidth cases' to check), interpolated in log size and never below 1.
// Bytes per rank, because that is what NCCL's channel and chunk sizing scale with (enqueue.cc
// reduces channels while bytes < channels x threads x threshold x ranks). It is 1 at and below
// 128 KiB per rank (1 MiB on 8): there the public sweeps disagree with each other by 2x (Azure's
// ~42 us against ~20 us on another H100 node) and the tuner's latencies stand. Also 1 across
// nodes, off NVSwitch, for kinds other than all-reduce, reduce-scatter and all-gather, and on GPU
// generations without a sweep (Volta, Blackwell).
double mid_size_slowdown(OpKind kind, Bytes bytes, const Fabric& fabric, const Placement& group);

// tuner_choice, then achievable: the prediction for a collective run by NCCL.
Estimate predict(OpKind kind, Bytes bytes, const Fabric& fabric, const Placement& group);

// Point-to-point (pipeline send/recv): Simple over NVLink or the NIC at the link's achievable rate.
Estimate predict_send_recv(Bytes bytes, const Fabric& fabric, bool same_node);
// The channels (one thread block each) NCCL runs a send or receive to one peer on.
int send_recv_channels(const Fabric& fabric, bool same_node);

// nccl-tests' bus-bandwidth factor for a kind on n ranks (doc/PERFORMANCE.md).
double bus_factor(OpKind kind, int ranks);

// "ring/Simple, 24 channels: 370.8 GB/s bus, 14.6 us latency".
std::string describe(const Estimate& estimate);

// What the model's figures for this fabric rest on, in one line (the prediction's "collectives"
// line): the tuner's constants, the achievable link rates, and whether a measured sweep sets the
// one-node mid sizes (nccl_sweeps.hpp) or the affine form stands.
std::string basis_of(const Fabric& fabric);

}  // namespace tandem::sim::nccl
