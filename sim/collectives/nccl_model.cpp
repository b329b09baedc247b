// NCCL's tuner (src/graph/tuning.cc ncclTopoTuneModel + ncclTopoGetAlgoTime) and the channel
// search's outcome (src/graph/search.cc), restated over the Fabric description; then the same
// formulas fed with achievable link rates. Constants: nccl_constants.hpp.
#include "sim/collectives/nccl_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <limits>
#include <span>
#include <stdexcept>
#include <vector>

#include "sim/collectives/nccl_constants.hpp"
#include "sim/collectives/nccl_sweeps.hpp"

namespace tandem::sim::nccl {

namespace c = constants;

namespace {

constexpr double kGB = 1e9;
constexpr double kUs = 1e-6;
const double kInf = std::numeric_limits<double>::infinity();

int arch_index(Arch a) { return static_cast<int>(a); }
int algo_index(Algorithm a) {
  switch (a) {
    case Algorithm::tree: return c::kTree;
    case Algorithm::ring: return c::kRing;
    case Algorithm::collnet_direct: return c::kCollnetDirect;
    case Algorithm::collnet_chain: return c::kCollnetChain;
    case Algorithm::nvls: return c::kNvls;
  }
  return c::kRing;
}
int proto_index(Protocol p) { return static_cast<int>(p); }
int nodes_index(int nodes) { return nodes <= 2 ? nodes - 1 : 2; }

std::span<const double> intra_speeds(Arch a) {
  if (a == Arch::blackwell) return c::kSpeedsIntraSm100;
  if (a == Arch::hopper) return c::kSpeedsIntraSm90;
  return c::kSpeedsIntra;
}
std::span<const double> inter_speeds(Arch a) {
  if (a == Arch::blackwell) return c::kSpeedsInterSm100;
  if (a == Arch::hopper) return c::kSpeedsInterSm90;
  return c::kSpeedsInter;
}

// The NVLink/PCIe rate NCCL's topology holds for one GPU, GB/s (search.cc's totalBw).
double intra_total_gbps(const Fabric& f) {
  return f.nvlink ? f.nvlinks_per_gpu * c::kNvlinkBw[arch_index(f.arch)] : f.pcie_bytes_per_s / kGB;
}

// What the channel search settles on (per channel GB/s, channel count).
struct Graph {
  int channels = 0;
  double bw_intra = 0, bw_inter = 0;
};

// Ring and tree graphs: one node fills the GPU's links with the fastest speed that fits; several
// nodes run one channel per NIC at the fastest speed both the NIC and the links carry. Then
// ncclTopoDupChannels doubles the channels at half the speed (not for slow Hopper channels).
Graph ring_graph(const Fabric& f, const Placement& g) {
  const double total = std::max(intra_total_gbps(f), 1e-9);
  Graph graph;
  if (g.nodes == 1) {
    const auto speeds = intra_speeds(f.arch);
    double speed = speeds.back();
    for (double s : speeds)
      if (s <= total) {
        speed = s;
        break;
      }
    graph.channels = std::clamp(static_cast<int>(std::floor(total / speed + 1e-9)), 1, c::kMaxRingChannels);
    graph.bw_intra = graph.bw_inter = speed;
  } else {
    const double nic = f.nic_bytes_per_s / kGB;
    const int nics = std::max(1, f.nics_per_node);
    double best = 0;
    for (double s : inter_speeds(f.arch)) {
      if (s > nic) continue;
      const int channels = std::min(nics, static_cast<int>(std::floor(total / s + 1e-9)));
      if (channels >= 1 && channels * s > best * (1 + 1e-12)) {
        best = channels * s;
        graph.channels = channels;
        graph.bw_intra = graph.bw_inter = s;
      }
    }
    if (graph.channels == 0) graph = {1, inter_speeds(f.arch).back(), inter_speeds(f.arch).back()};
  }
  const bool hopper_plus = f.arch == Arch::hopper || f.arch == Arch::blackwell;
  if (graph.bw_intra >= 25.0 && !(hopper_plus && graph.bw_intra < 50.0 && graph.channels > 4)) {
    const int dup = std::min(graph.channels * 2, c::kMaxRingChannels);
    const int div = (dup + graph.channels - 1) / graph.channels;
    graph.bw_intra /= div;
    graph.bw_inter /= div;
    graph.channels = dup;
  }
  return graph;
}

// NVLS: one channel per GPU of the node (NVLS heads), all at the speed that fits them together.
Graph nvls_graph(const Fabric& f, const Placement& g) {
  Graph graph;
  if (!f.nvlink || !f.nvswitch || c::kNvlsEfficiency[arch_index(f.arch)] <= 0) return graph;
  const double total = intra_total_gbps(f);
  graph.channels = std::min(c::kMaxNvlsArity, g.per_node());
  for (double s : intra_speeds(f.arch))
    if (s * graph.channels <= total) {
      graph.bw_intra = s;
      break;
    }
  // Within one node no network caps NVLS (the tuner then prefers NVLS for large all-reduces, as
  // NCCL does on 8 H100: ring LL up to 1 MB, NVLS from 2 MB on; nccl-tests issue #309).
  graph.bw_inter = g.nodes == 1 ? std::numeric_limits<double>::infinity() : graph.bw_intra;
  if (graph.bw_intra == 0) graph.channels = 0;
  return graph;
}

bool kind_supported(OpKind kind) {
  return kind == OpKind::all_reduce || kind == OpKind::reduce_scatter || kind == OpKind::all_gather ||
         kind == OpKind::broadcast;
}

// tuning.cc's rules for which (algorithm, protocol) a collective may use here.
bool combination_allowed(OpKind kind, Algorithm a, Protocol p, const Fabric& f, const Placement& g) {
  if (!kind_supported(kind)) return a == Algorithm::ring && p == Protocol::simple;
  if (kind == OpKind::broadcast && a != Algorithm::ring) return false;
  const bool rs_ag = kind == OpKind::reduce_scatter || kind == OpKind::all_gather;
  if (rs_ag && a != Algorithm::ring && a != Algorithm::nvls && a != Algorithm::collnet_direct) return false;
  if (a == Algorithm::nvls && p != Protocol::simple) return false;
  const bool collnet = a == Algorithm::collnet_direct || a == Algorithm::collnet_chain;
  if (collnet && (!f.collnet || g.nodes == 1)) return false;
  if (collnet && p != Protocol::simple) return false;
  // NVLS across nodes needs CollNet (NVLS Tree is not modeled; see the README's NCCL section).
  if (a == Algorithm::nvls && (g.nodes > 1 || rs_ag)) return false;
  // LL128 is enabled by default over NVLink paths only (typeIntra <= PATH_NVB), compute capability >= 70.
  if (p == Protocol::ll128 && !f.nvlink) return false;
  return true;
}

int steps_of(OpKind kind, int n) {
  if (kind == OpKind::all_reduce) return 2 * (n - 1);
  if (kind == OpKind::reduce_scatter || kind == OpKind::all_gather) return n - 1;
  return n;
}

int log2i(long long v) {
  int l = -1;
  while (v > 0) {
    v >>= 1;
    ++l;
  }
  return l;
}

// The Simple-protocol bus bandwidth (GB/s, NCCL's "busBw" before refinements) the two sides feed
// the formulas: the tuner's channels x speed, or the achievable link rates.
struct BusBase {
  double ring = 0, tree = 0;
  double nvls_intra_per_channel = 0, nvls_inter_per_channel = 0;  // per NVLS channel
};

BusBase tuner_base(const Graph& ring, const Graph& nvls, const Placement& g, bool collnet) {
  BusBase b;
  const double per_channel = g.nodes <= 2 || collnet ? ring.bw_intra : ring.bw_inter;
  b.ring = b.tree = ring.channels * per_channel;
  b.nvls_intra_per_channel = nvls.bw_intra;
  b.nvls_inter_per_channel = nvls.bw_inter;
  return b;
}

BusBase achievable_base(const Fabric& f, const Placement& g, const Graph& nvls) {
  BusBase b;
  const double intra = f.intra_bytes_per_s() / kGB;
  const int m = g.per_node();
  if (g.nodes == 1) {
    b.ring = intra;
  } else {
    // One ring per NIC, each entering a node on one GPU and leaving it from the next: a GPU's
    // step data goes (m-1)/m over NVLink and 1/m out of its NIC (ring.cpp's multi-rail ring).
    const double nics = f.nic_achievable_bytes_per_s() / kGB * std::max(1, std::min(f.nics_per_node, m));
    b.ring = m > 1 ? std::min(intra * m / (m - 1.0), nics) : f.nic_achievable_bytes_per_s() / kGB;
  }
  b.tree = b.ring;
  if (nvls.channels > 0) {  // only decides availability here: achievable() sets NVLS's rate
    b.nvls_intra_per_channel = intra / nvls.channels;
    b.nvls_inter_per_channel = kInf;
  }
  return b;
}

// tuning.cc's formulas on one (algorithm, protocol), from a BusBase.
Estimate evaluate(OpKind kind, Bytes bytes, const Fabric& f, const Placement& g, Algorithm a, Protocol p, const BusBase& base,
                  const Graph& ring, const Graph& nvls) {
  Estimate e;
  e.algorithm = a;
  e.protocol = p;
  e.seconds = kInf;
  if (g.ranks <= 1 || !combination_allowed(kind, a, p, f, g)) return e;
  const int n = g.ranks;
  const int nodes = g.nodes;
  const double ppn = static_cast<double>(n) / nodes;
  const int ai = arch_index(f.arch);
  const int ni = nodes_index(nodes);
  const int index1 = nodes == 1 ? ai : (f.amd_host ? 1 : 0);
  const double ll_max = c::kLLMaxBw[index1][ni];
  const int nsteps = steps_of(kind, n);
  const bool rs_ag = kind == OpKind::reduce_scatter || kind == OpKind::all_gather;

  const Graph& graph = a == Algorithm::nvls ? nvls : ring;
  e.channels = graph.channels;
  double bus = 0;
  switch (a) {
    case Algorithm::ring: bus = base.ring; break;
    case Algorithm::tree: bus = base.tree; break;
    case Algorithm::collnet_direct:
    case Algorithm::collnet_chain: bus = base.ring; break;
    case Algorithm::nvls: {
      if (nvls.channels < 2) return e;
      double intra = base.nvls_intra_per_channel * c::kNvlsEfficiency[ai] * (nvls.channels - 1) / nvls.channels;
      intra *= kind == OpKind::all_reduce ? 2.0 : (ppn - 1) / ppn;
      bus = nvls.channels * std::min(intra, base.nvls_inter_per_channel);
      break;
    }
  }
  const int channels = graph.channels;
  if (a == Algorithm::ring && p == Protocol::ll) bus = std::min(ll_max, bus * 0.5);
  if (a == Algorithm::ring && p == Protocol::ll128) bus = std::min(bus * 0.92, channels * c::kPerChannelRingLL128Bw[ai][ni]);
  if (a == Algorithm::tree && kind == OpKind::all_reduce) bus = std::min(bus * 0.92, channels * c::kPerChannelTreeBw[ai][ni]);
  if (a == Algorithm::tree && p == Protocol::ll) bus = std::min(bus / 3.8, ll_max);
  if (a == Algorithm::tree && p == Protocol::ll128)
    bus = std::min(bus * (nodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0), channels * c::kPerChannelTreeLL128Bw[ai][ni]);
  if (a == Algorithm::collnet_direct && !rs_ag) {
    double factor = ppn / channels;  // GPU/NIC ratio
    factor -= (factor - 1) / 2;
    bus /= factor;
    if (f.arch == Arch::hopper || f.arch == Arch::blackwell) bus *= 0.85;
  }
  // Bus to algorithm bandwidth (NCCL's "ratio").
  double alg = bus;
  if (!(a != Algorithm::ring && rs_ag)) alg *= (a == Algorithm::ring || a == Algorithm::nvls) ? double(n) / nsteps : 0.5;

  // Latency.
  const int pi = proto_index(p);
  const int algo = algo_index(a);
  const int intra_hw = f.nvlink ? c::kNvlinkHw : c::kPciHw;
  double lat = c::kBaseLatencyUs[algo][pi];
  double intra_lat = c::kHwLatencyUs[intra_hw][algo][pi];
  double inter_lat = ppn == 1 ? c::kHwLatencyUs[c::kNetHw][c::kTree][pi] : c::kHwLatencyUs[c::kNetHw][algo][pi];
  switch (a) {
    case Algorithm::ring:
      if (kind == OpKind::broadcast) {
        lat += c::kHwLatencyUs[nodes == 1 ? intra_hw : c::kNetHw][algo][pi];
      } else {
        double net_overhead = 0;
        if (nodes > 1) net_overhead = (f.amd_host ? c::kNetOverheadAmdUs : c::kNetOverheadIntelUs) * (p == Protocol::simple ? 3 : 1);
        intra_lat = std::max(intra_lat, net_overhead);
        const int inter_steps = nodes == 1 ? 0 : kind == OpKind::all_reduce ? 2 * (nodes - 1) : nodes - 1;
        lat += (nsteps - inter_steps) * intra_lat + inter_steps * inter_lat;
      }
      break;
    case Algorithm::tree:
      lat += 2 * ((ppn - 1) * intra_lat + log2i(nodes) * inter_lat);
      break;
    case Algorithm::collnet_direct:
      lat += 2 * (std::min(1.0, ppn - 1) * intra_lat + (ppn - 1) * 0.4) + inter_lat;
      break;
    case Algorithm::collnet_chain:
      lat += 2 * (ppn - 1) * intra_lat + inter_lat;
      break;
    case Algorithm::nvls:
      lat = intra_lat + (nodes > 1 ? inter_lat : 0.0);
      break;
  }
  // ncclTopoGetAlgoTime's corrections.
  const long long logsize = log2i(static_cast<long long>(bytes) >> 6);
  if (a == Algorithm::tree && kind == OpKind::all_reduce && logsize >= 0 && logsize < 23) alg *= c::kTreeCorrection[pi][logsize];
  if (a == Algorithm::ring && p == Protocol::simple && nodes > 1 && kind == OpKind::all_reduce &&
      bytes / (double(ring.channels) * n) >= 64)
    lat *= f.arch == Arch::volta ? c::kRingPlateauFactorVolta : c::kRingPlateauFactor;

  if (!(alg > 0)) return e;
  e.alg_bytes_per_s = alg * kGB;
  e.bus_bytes_per_s = e.alg_bytes_per_s * bus_factor(kind, n);
  e.latency_s = lat * kUs;
  e.seconds = e.latency_s + bytes / e.alg_bytes_per_s;
  return e;
}

// NCCL's loop order: algorithms tree, ring, collnet direct, collnet chain, nvls; protocols LL,
// LL128, Simple; a later one wins only when strictly faster.
constexpr Algorithm kNcclOrder[] = {Algorithm::tree, Algorithm::ring, Algorithm::collnet_direct,
                                    Algorithm::collnet_chain, Algorithm::nvls};
constexpr Protocol kProtocols[] = {Protocol::ll, Protocol::ll128, Protocol::simple};

Estimate best_of(OpKind kind, Bytes bytes, const Fabric& f, const Placement& g, const Algorithm* only) {
  const Graph ring = ring_graph(f, g);
  const Graph nvls = nvls_graph(f, g);
  const BusBase base = tuner_base(ring, nvls, g, f.collnet);
  Estimate best;
  best.seconds = kInf;
  for (Algorithm a : kNcclOrder) {
    if (only != nullptr && a != *only) continue;
    for (Protocol p : kProtocols) {
      const Estimate e = evaluate(kind, bytes, f, g, a, p, base, ring, nvls);
      if (e.available() && e.seconds < best.seconds) best = e;
    }
  }
  if (!best.available()) {  // nothing NCCL would run (e.g. one rank): a ring, Simple
    best.algorithm = only != nullptr ? *only : Algorithm::ring;
    best.protocol = Protocol::simple;
  }
  return best;
}

void check(const Placement& g) {
  if (g.ranks < 1 || g.nodes < 1 || g.nodes > g.ranks) throw std::invalid_argument("nccl model: bad group shape");
}

}  // namespace

const char* to_string(Arch arch) {
  switch (arch) {
    case Arch::volta: return "volta";
    case Arch::ampere: return "ampere";
    case Arch::hopper: return "hopper";
    case Arch::blackwell: return "blackwell";
  }
  return "?";
}

const char* to_string(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::ring: return "ring";
    case Algorithm::tree: return "tree";
    case Algorithm::nvls: return "nvls";
    case Algorithm::collnet_direct: return "collnet_direct";
    case Algorithm::collnet_chain: return "collnet_chain";
  }
  return "?";
}

const char* to_string(Protocol protocol) {
  switch (protocol) {
    case Protocol::ll: return "LL";
    case Protocol::ll128: return "LL128";
    case Protocol::simple: return "Simple";
  }
  return "?";
}

BytesPerSecond Fabric::intra_bytes_per_s() const { return intra_total_gbps(*this) * kGB; }

BytesPerSecond Fabric::nic_achievable_bytes_per_s() const {
  const double nic = nic_bytes_per_s / kGB;
  for (double s : inter_speeds(arch))
    if (s <= nic) return s * kGB;
  return nic_bytes_per_s;
}

double bus_factor(OpKind kind, int ranks) {
  const double n = ranks;
  switch (kind) {
    case OpKind::all_reduce: return ranks > 1 ? 2 * (n - 1) / n : 1.0;
    case OpKind::reduce_scatter:
    case OpKind::all_gather:
    case OpKind::all_to_all: return ranks > 1 ? (n - 1) / n : 1.0;
    default: return 1.0;
  }
}

Estimate tuner_estimate(OpKind kind, Bytes bytes, const Fabric& fabric, const Placement& group, Algorithm algorithm,
                        Protocol protocol) {
  check(group);
  const Graph ring = ring_graph(fabric, group);
  const Graph nvls = nvls_graph(fabric, group);
  return evaluate(kind, bytes, fabric, group, algorithm, protocol, tuner_base(ring, nvls, group, fabric.collnet), ring, nvls);
}

Estimate tuner_choice(OpKind kind, Bytes bytes, const Fabric& fabric, const Placement& group) {
  check(group);
  return best_of(kind, bytes, fabric, group, nullptr);
}

Estimate tuner_choice(OpKind kind, Bytes bytes, const Fabric& fabric, const Placement& group, Algorithm algorithm) {
  check(group);
  return best_of(kind, bytes, fabric, group, &algorithm);
}

namespace {

// achievable() before the mid-size slowdown: latency + bytes / the achievable bus bandwidth.
Estimate achievable_affine(OpKind kind, Bytes bytes, const Fabric& fabric, const Placement& group, Algorithm algorithm,
                           Protocol protocol) {
  const Graph ring = ring_graph(fabric, group);
  const Graph nvls = nvls_graph(fabric, group);
  Estimate e = evaluate(kind, bytes, fabric, group, algorithm, protocol, achievable_base(fabric, group, nvls), ring, nvls);
  if (algorithm == Algorithm::nvls && e.available()) {
    // NVLS moves the buffer at tuning.cc's per-channel NVLS rate, bwIntra x nvlsEfficiency x
    // (channels - 1) / channels, over the GPU's achievable NVLink rate; the tuner's further "x2,
    // AllReduce pipelines two operations" is its own optimism (on 8 H100 it expects a 551 GB/s
    // busbw; NVIDIA measures ~480, nccl-tests issue #212).
    e.alg_bytes_per_s = fabric.intra_bytes_per_s() * c::kNvlsEfficiency[arch_index(fabric.arch)] *
                        (nvls.channels - 1) / nvls.channels;
    e.bus_bytes_per_s = e.alg_bytes_per_s * bus_factor(kind, group.ranks);
    e.seconds = e.latency_s + bytes / e.alg_bytes_per_s;
  }
  return e;
}

// The slowdown over bytes per rank, as (log2 bytes per rank, slowdown) knots.
struct RampKnot {
  double log2_per_rank = 0;
  double slowdown = 1;
};
constexpr double kRampStartPerRankBytes = 128.0 * 1024;  // mid_size_slowdown: 1 at and below

std::vector<RampKnot> build_ramp(Arch arch) {
  const NodeSweep sweep = measured_node_all_reduce(arch);
  std::vector<RampKnot> ramp;
  if (sweep.points.empty()) return ramp;
  Fabric node;
  node.arch = arch;
  node.nvlink = node.nvswitch = true;
  node.nvlinks_per_gpu = sweep.nvlinks_per_gpu;
  const Placement group{sweep.ranks, 1};
  // Measured over modelled time of one sweep point (nccl-tests: time = size x bus factor / busbw).
  auto ratio = [&](const SweepPoint& p) {
    const double measured_s = p.bytes * bus_factor(OpKind::all_reduce, sweep.ranks) / (p.bus_gb_per_s * kGB);
    const Estimate chosen = best_of(OpKind::all_reduce, p.bytes, node, group, nullptr);
    return measured_s / achievable_affine(OpKind::all_reduce, p.bytes, node, group, chosen.algorithm, chosen.protocol).seconds;
  };
  const double plateau = ratio(sweep.points.back());
  ramp.push_back({std::log2(kRampStartPerRankBytes), 1.0});
  for (const SweepPoint& p : sweep.points)
    if (p.bytes / sweep.ranks > kRampStartPerRankBytes)
      ramp.push_back({std::log2(p.bytes / sweep.ranks), std::max(1.0, ratio(p) / plateau)});
  return ramp;
}

}  // namespace

double mid_size_slowdown(OpKind kind, Bytes bytes, const Fabric& fabric, const Placement& group) {
  const bool ring_kind = kind == OpKind::all_reduce || kind == OpKind::reduce_scatter || kind == OpKind::all_gather;
  if (!ring_kind || group.nodes != 1 || group.ranks < 2 || !fabric.nvlink || !fabric.nvswitch || !(bytes > 0)) return 1.0;
  // Built once per generation, from the model itself and the measured sweep.
  static const std::vector<RampKnot> ramps[] = {build_ramp(Arch::volta), build_ramp(Arch::ampere),
                                                build_ramp(Arch::hopper), build_ramp(Arch::blackwell)};
  const std::vector<RampKnot>& ramp = ramps[arch_index(fabric.arch)];
  if (ramp.size() < 2) return 1.0;
  const double x = std::log2(bytes / group.ranks);
  if (x <= ramp.front().log2_per_rank) return 1.0;
  if (x >= ramp.back().log2_per_rank) return ramp.back().slowdown;
  const auto upper = std::find_if(ramp.begin(), ramp.end(), [x](const RampKnot& k) { return k.log2_per_rank >= x; });
  const RampKnot& hi = *upper;
  const RampKnot& lo = *std::prev(upper);
  const double w = (x - lo.log2_per_rank) / (hi.log2_per_rank - lo.log2_per_rank);
  return lo.slowdown + w * (hi.slowdown - lo.slowdown);
}

Estimate achievable(OpKind kind, Bytes bytes, const Fabric& fabric, const Placement& group, Algorithm algorithm,
                    Protocol protocol, bool measured_mid_size) {
  check(group);
  Estimate e = achievable_affine(kind, bytes, fabric, group, algorithm, protocol);
  const double slowdown = measured_mid_size ? mid_size_slowdown(kind, bytes, fabric, group) : 1.0;
  if (e.available() && slowdown > 1.0) {
    e.latency_s *= slowdown;
    e.alg_bytes_per_s /= slowdown;
    e.bus_bytes_per_s /= slowdown;
    e.seconds *= slowdown;
  }
  return e;
}

Estimate predict(OpKind kind, Bytes bytes, const Fabric& fabric, const Placement& group) {
  const Estimate chosen = tuner_choice(kind, bytes, fabric, group);
  const Estimate real = achievable(kind, bytes, fabric, group, chosen.algorithm, chosen.protocol);
  return real.available() ? real : chosen;
}

int send_recv_channels(const Fabric& fabric, bool same_node) {
  // src/graph/paths.cc, ncclTopoGetNchannels: 2 per NVLink to the peer, 2 over PCIe, and across
  // nodes NCCL_NCHANNELS_PER_NET_PEER (2 by default); ncclTopoComputeP2pChannels takes the fewest
  // over the communicator's peers and rounds it up to a power of two, within the communicator's
  // channels (at most kMaxRingChannels here). `same_node`: every peer of the communicator is.
  int channels = 2;
  if (same_node && fabric.nvlink) channels = 2 * std::max(1, fabric.nvlinks_per_gpu);
  int pow2 = 1;
  while (pow2 < channels) pow2 *= 2;
  return std::min(pow2, c::kMaxRingChannels);
}

Estimate predict_send_recv(Bytes bytes, const Fabric& fabric, bool same_node) {
  // A point-to-point transfer is a two-rank ring step with Simple: one hardware step latency plus
  // the base latency, at the achievable rate of the link it crosses.
  Estimate e;
  e.algorithm = Algorithm::ring;
  e.protocol = Protocol::simple;
  e.channels = send_recv_channels(fabric, same_node);
  const int hw = same_node ? (fabric.nvlink ? c::kNvlinkHw : c::kPciHw) : c::kNetHw;
  e.latency_s = (c::kBaseLatencyUs[c::kRing][c::kSimple] + c::kHwLatencyUs[hw][c::kRing][c::kSimple]) * kUs;
  e.alg_bytes_per_s = same_node ? fabric.intra_bytes_per_s() : fabric.nic_achievable_bytes_per_s();
  e.bus_bytes_per_s = e.alg_bytes_per_s;
  e.seconds = e.alg_bytes_per_s > 0 ? e.latency_s + bytes / e.alg_bytes_per_s : kInf;
  return e;
}

std::string basis_of(const Fabric& f) {
  std::string text = std::string("NCCL model (") + to_string(f.arch) +
                     "): NVIDIA/nccl 5067397 tuner constants, NCCL's achievable NVLink/NIC rates; ";
  const NodeSweep sweep = measured_node_all_reduce(f.arch);
  if (f.nvlink && f.nvswitch && !sweep.points.empty())
    text += std::string("one-node mid sizes from the measured sweep of ") + sweep.source +
            "; across nodes affine below the plateau";
  else
    text += "affine below the plateau (no measured sweep for this fabric)";
  return text + "; checked against the published bus bandwidths of validation/nccl (validation/README.md)";
}

std::string describe(const Estimate& e) {
  char line[160];
  std::snprintf(line, sizeof line, "%s/%s, %d channels: %.1f GB/s bus, %.1f us latency", to_string(e.algorithm),
                to_string(e.protocol), e.channels, e.bus_bytes_per_s / kGB, e.latency_s / kUs);
  return line;
}

}  // namespace tandem::sim::nccl
