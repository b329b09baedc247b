// The NCCL model's shape: what NCCL's tuner picks where (protocol by size, algorithm by size and
// topology), latency-bound small messages, and the achievable bus bandwidth of each fabric from
// NCCL's per-link rates (nccl_model.hpp). Behaviour, not timings: the numbers asserted are the
// model's published inputs (per-link rates x links), not fitted outputs.
#include "sim/collectives/nccl_model.hpp"
#include "sim/collectives/nccl_sweeps.hpp"

#include <gtest/gtest.h>

namespace tandem::sim::nccl {
namespace {

// An NVSwitch node with one NIC per GPU (rails), as the DGX systems.
Fabric dgx(Arch arch, int nvlinks, BytesPerSecond nic_bytes_per_s) {
  Fabric f;
  f.arch = arch;
  f.nvlinks_per_gpu = nvlinks;
  f.nvswitch = true;
  f.nic_bytes_per_s = nic_bytes_per_s;
  f.nics_per_node = 8;
  return f;
}
Fabric dgx_h100() { return dgx(Arch::hopper, 18, 50e9); }  // NVLink 4, NDR
Fabric dgx_a100() { return dgx(Arch::ampere, 12, 25e9); }  // NVLink 3, HDR

constexpr Placement kOneNode{8, 1};

TEST(NcclModel, MessagesBelowTheLLThresholdAreLatencyBound) {
  // 4 KB on 8 H100: LL, and the time is all latency: doubling the size changes it by under 1%.
  const Estimate small = predict(OpKind::all_reduce, 4096, dgx_h100(), kOneNode);
  EXPECT_EQ(small.protocol, Protocol::ll);
  EXPECT_GT(small.latency_s / small.seconds, 0.95);
  const Estimate twice = predict(OpKind::all_reduce, 8192, dgx_h100(), kOneNode);
  EXPECT_LT(twice.seconds / small.seconds, 1.01);
  // 1 GB is bandwidth-bound: Simple, latency a sliver of the time.
  const Estimate large = predict(OpKind::all_reduce, 1e9, dgx_h100(), kOneNode);
  EXPECT_EQ(large.protocol, Protocol::simple);
  EXPECT_LT(large.latency_s / large.seconds, 0.02);
}

TEST(NcclModel, ProtocolsGrowWithTheMessageLLThenLL128ThenSimple) {
  // A100 ring: LL for tiny messages, LL128 in between, Simple for large ones (NCCL's own order).
  Protocol last = Protocol::ll;
  bool saw_ll128 = false;
  for (double bytes = 64; bytes <= 16e9; bytes *= 2) {
    const Estimate e = tuner_choice(OpKind::all_gather, bytes, dgx_a100(), kOneNode);
    EXPECT_GE(static_cast<int>(e.protocol), static_cast<int>(last)) << bytes;
    saw_ll128 = saw_ll128 || e.protocol == Protocol::ll128;
    last = e.protocol;
  }
  EXPECT_TRUE(saw_ll128);
  EXPECT_EQ(last, Protocol::simple);
}

TEST(NcclModel, AllReduceOnEightH100SwitchesFromRingLLToNvlsBetweenOneAndTwoMegabytes) {
  // What NCCL does on 8 H100 (nccl-tests issue #309): ring/LL up to 1 MB, NVLS/Simple from 2 MB.
  const Estimate one_mb = tuner_choice(OpKind::all_reduce, 1 << 20, dgx_h100(), kOneNode);
  EXPECT_EQ(one_mb.algorithm, Algorithm::ring);
  EXPECT_EQ(one_mb.protocol, Protocol::ll);
  const Estimate two_mb = tuner_choice(OpKind::all_reduce, 2 << 20, dgx_h100(), kOneNode);
  EXPECT_EQ(two_mb.algorithm, Algorithm::nvls);
  EXPECT_EQ(tuner_choice(OpKind::all_reduce, 8e9, dgx_h100(), kOneNode).algorithm, Algorithm::nvls);
  // No NVLS before Hopper, nor for all-gather.
  EXPECT_EQ(tuner_choice(OpKind::all_reduce, 8e9, dgx_a100(), kOneNode).algorithm, Algorithm::ring);
  EXPECT_EQ(tuner_choice(OpKind::all_gather, 8e9, dgx_h100(), kOneNode).algorithm, Algorithm::ring);
}

TEST(NcclModel, ManyNodesUseTheTreeForSmallAllReducesAndTheRingForLargeOnes) {
  const Placement four_nodes{32, 4};
  EXPECT_EQ(tuner_choice(OpKind::all_reduce, 1024, dgx_a100(), four_nodes).algorithm, Algorithm::tree);
  EXPECT_EQ(tuner_choice(OpKind::all_reduce, 8e9, dgx_a100(), four_nodes).algorithm, Algorithm::ring);
  // Broadcast has only the ring.
  EXPECT_EQ(tuner_choice(OpKind::broadcast, 1024, dgx_a100(), four_nodes).algorithm, Algorithm::ring);
}

TEST(NcclModel, RingBusBandwidthIsLinksTimesNcclsPerLinkRate) {
  // topo.h: 20.6 GB/s per NVLink on Hopper, 20.0 on Ampere; at 8 GiB, the plateau (no mid-size slowdown).
  const Bytes plateau = 8.0 * (1ull << 30);
  const Estimate h100 = achievable(OpKind::all_reduce, plateau, dgx_h100(), kOneNode, Algorithm::ring, Protocol::simple);
  EXPECT_NEAR(h100.bus_bytes_per_s, 18 * 20.6e9, 1e6);
  const Estimate a100 = achievable(OpKind::all_reduce, plateau, dgx_a100(), kOneNode, Algorithm::ring, Protocol::simple);
  EXPECT_NEAR(a100.bus_bytes_per_s, 12 * 20.0e9, 1e6);
  // LL halves the bytes per line and is capped (llMaxBws): far below Simple.
  const Estimate ll = achievable(OpKind::all_reduce, 8e9, dgx_h100(), kOneNode, Algorithm::ring, Protocol::ll);
  EXPECT_LT(ll.bus_bytes_per_s, 0.5 * h100.bus_bytes_per_s);
}

TEST(NcclModel, AcrossNodesTheRingIsBoundByTheNicsWhenTheyAreSlowerThanNvlink) {
  // 8 HDR rails at NCCL's 24 GB/s each: 192 GB/s, below the A100's NVLink.
  const Estimate a100 = predict(OpKind::all_reduce, 8e9, dgx_a100(), Placement{16, 2});
  EXPECT_EQ(a100.algorithm, Algorithm::ring);
  EXPECT_NEAR(a100.bus_bytes_per_s, 8 * 24e9, 1e6);
  // One GPU per node: one NIC carries the whole ring.
  const Estimate single = achievable(OpKind::all_reduce, 8e9, dgx_a100(), Placement{4, 4}, Algorithm::ring,
                                     Protocol::simple);
  EXPECT_NEAR(single.bus_bytes_per_s, 24e9, 1e6);
}

TEST(NcclModel, SendRecvRunsAtTheAchievableRateOfTheLinkItCrosses) {
  const Estimate nvlink = predict_send_recv(1e9, dgx_h100(), true);
  const Estimate ib = predict_send_recv(1e9, dgx_h100(), false);
  EXPECT_NEAR(nvlink.alg_bytes_per_s, 18 * 20.6e9, 1e6);
  EXPECT_NEAR(ib.alg_bytes_per_s, 48e9, 1e6);  // NDR: NCCL's 48 GB/s channel
  EXPECT_GT(ib.latency_s, nvlink.latency_s);
  // One thread block per channel: 2 per NVLink (18 on an H100: 36, within the 32 channels) and
  // NCCL_NCHANNELS_PER_NET_PEER's 2 across nodes (src/graph/paths.cc).
  EXPECT_EQ(nvlink.channels, 32);
  EXPECT_EQ(ib.channels, 2);
}

TEST(NcclModel, IsAPureFunction) {
  const Estimate a = predict(OpKind::reduce_scatter, 3e7, dgx_h100(), Placement{16, 2});
  const Estimate b = predict(OpKind::reduce_scatter, 3e7, dgx_h100(), Placement{16, 2});
  EXPECT_EQ(a.seconds, b.seconds);
  EXPECT_EQ(a.algorithm, b.algorithm);
  EXPECT_EQ(a.protocol, b.protocol);
}

TEST(NcclModel, MidSizeAllReducesOnOneNodeTakeAsLongAsTheMeasuredSweepSays) {
  // The slowdown is read from the 8-GPU sweeps (nccl_sweeps.cpp): with it, the model times the
  // sweep's own mid sizes as measured, relative to the plateau; without it (the affine form) an
  // 8 MiB all-reduce on 8 H100 ran 1.5x too fast.
  for (const Fabric& node : {dgx_a100(), dgx_h100()}) {
    const NodeSweep sweep = measured_node_all_reduce(node.arch);
    ASSERT_FALSE(sweep.points.empty());
    auto measured_over_predicted = [&](const SweepPoint& p) {
      const Seconds measured = p.bytes * bus_factor(OpKind::all_reduce, 8) / (p.bus_gb_per_s * 1e9);
      return measured / predict(OpKind::all_reduce, p.bytes, node, kOneNode).seconds;
    };
    const double plateau = measured_over_predicted(sweep.points.back());
    for (const SweepPoint& p : sweep.points) {
      if (p.bytes >= 2.0 * (1 << 20)) {
        EXPECT_NEAR(measured_over_predicted(p) / plateau, 1.0, 1e-9) << p.bytes;
      }
    }
    const Bytes eight_mib = 8.0 * (1 << 20);
    EXPECT_GT(mid_size_slowdown(OpKind::all_reduce, eight_mib, node, kOneNode), 1.3);
  }
}

TEST(NcclModel, MidSizeSlowdownFollowsBytesPerRankOnOneNodeOnly) {
  const Bytes eight_mib = 8.0 * (1 << 20);
  const double eight_ranks = mid_size_slowdown(OpKind::all_reduce, eight_mib, dgx_h100(), kOneNode);
  // Half the buffer on half the ranks: the same bytes per rank, the same slowdown (enqueue.cc sizes
  // channels by bytes per rank); all-gathers and reduce-scatters alike.
  EXPECT_DOUBLE_EQ(mid_size_slowdown(OpKind::all_reduce, eight_mib / 2, dgx_h100(), {4, 1}), eight_ranks);
  EXPECT_DOUBLE_EQ(mid_size_slowdown(OpKind::all_gather, eight_mib, dgx_h100(), kOneNode), eight_ranks);
  // None where the sweeps do not reach: small messages (the tuner's latencies stand), the plateau,
  // several nodes, a generation without a sweep, point-to-point kinds.
  EXPECT_EQ(mid_size_slowdown(OpKind::all_reduce, 1 << 20, dgx_h100(), kOneNode), 1.0);
  EXPECT_EQ(mid_size_slowdown(OpKind::all_reduce, 64.0 * (1ull << 30), dgx_h100(), kOneNode), 1.0);
  EXPECT_EQ(mid_size_slowdown(OpKind::all_reduce, eight_mib * 2, dgx_h100(), {16, 2}), 1.0);
  Fabric volta = dgx_h100();
  volta.arch = Arch::volta;
  EXPECT_EQ(mid_size_slowdown(OpKind::all_reduce, eight_mib, volta, kOneNode), 1.0);
  EXPECT_EQ(mid_size_slowdown(OpKind::broadcast, eight_mib, dgx_h100(), kOneNode), 1.0);
}

TEST(NcclModel, ItsBasisNamesTheSweepItsMidSizesComeFromOrSaysThereIsNone) {
  EXPECT_NE(basis_of(dgx_h100()).find("ND_H100_v5_results.md"), std::string::npos) << basis_of(dgx_h100());
  EXPECT_NE(basis_of(dgx_a100()).find("ND_A100_v4_results.md"), std::string::npos) << basis_of(dgx_a100());
  Fabric volta = dgx_a100();
  volta.arch = Arch::volta;
  EXPECT_NE(basis_of(volta).find("no measured sweep"), std::string::npos) << basis_of(volta);
}

}  // namespace
}  // namespace tandem::sim::nccl
