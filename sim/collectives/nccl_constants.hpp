// NCCL's tuning constants, as published in NVIDIA/nccl (commit 5067397, 2026-06; the figures have
// been stable since NCCL 2.19). Internal to nccl_model.cpp. Latencies in microseconds, bandwidths
// in GB/s (1e9 bytes/s), as NCCL writes them. Indexes follow NCCL's orders:
//   algorithm  tree, ring, collnet_direct, collnet_chain, nvls, nvls_tree  (NCCL_ALGO_*)
//   protocol   LL, LL128, Simple                                            (NCCL_PROTO_*)
//   hardware   NVLink, PCI, network                                         (NCCL_HW_*)
//   arch       Volta, Ampere, Hopper, Blackwell                             (NCCL_*_COMPCAP_IDX)
//   nodes      1, 2, 3 or more                                              (tuning.cc: index2)
#pragma once

namespace tandem::sim::nccl::constants {

inline constexpr int kTree = 0, kRing = 1, kCollnetDirect = 2, kCollnetChain = 3, kNvls = 4, kNvlsTree = 5;
inline constexpr int kAlgorithms = 6;
inline constexpr int kLL = 0, kLL128 = 1, kSimple = 2;
inline constexpr int kNvlinkHw = 0, kPciHw = 1, kNetHw = 2;

// src/graph/tuning.cc, ncclTunerConstantsDefaults.baseLatencies: per collective call.
inline constexpr double kBaseLatencyUs[kAlgorithms][3] = {
    {6.8, 14.0, 8.4}, {6.6, 14.0, 8.4}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}};

// tuning.cc, hwLatencies: per step (ring) or per level (tree), by the hardware the step crosses.
inline constexpr double kHwLatencyUs[3][kAlgorithms][3] = {
    /* NVLink */ {{0.6, 1.25, 4.0}, {0.6, 1.9, 3.4}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 25}, {0, 0, 25}},
    /* PCI */ {{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 0}, {0, 0, 0}},
    /* net */ {{5.0, 8.5, 14}, {2.7, 4.0, 14.0}, {0, 0, 31}, {0, 0, 30}, {0, 0, 18}, {0, 0, 20.9}}};

// tuning.cc, llMaxBws[index1][nodes]: index1 = the GPU arch on one node; on several nodes the CPU
// vendor (0 Intel, 1 AMD).
inline constexpr double kLLMaxBw[4][3] = {
    {39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {2 * 141.0, 2 * 45.0, 2 * 35.0}};
// tuning.cc, per-channel caps [arch][nodes].
inline constexpr double kPerChannelRingLL128Bw[4][3] = {
    {20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}, {40.0, 40.0, 40.0}};
inline constexpr double kPerChannelTreeLL128Bw[4][3] = {
    {20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}};
inline constexpr double kPerChannelTreeBw[4][3] = {
    {26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}};
// tuning.cc, nvlsEfficiency[arch]: the fraction of NVLink bandwidth NVLink SHARP turns into
// reduction bandwidth (0: no NVLS before Hopper).
inline constexpr double kNvlsEfficiency[4] = {0.0, 0.0, 0.85, 0.74};

// tuning.cc, treeCorrectionFactor[protocol][log2(bytes / 64)]: the tree's bandwidth on mid sizes.
inline constexpr double kTreeCorrection[3][24] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9}};

// tuning.cc getNetOverhead: a network step's CPU proxy cost (1 us Intel, 2 us AMD; x3 for Simple).
inline constexpr double kNetOverheadIntelUs = 1.0;
inline constexpr double kNetOverheadAmdUs = 2.0;
// tuning.cc ncclTopoGetAlgoTime: multi-node ring Simple all-reduce latency "plateau" factor.
inline constexpr double kRingPlateauFactor = 1.4;       // compute capability >= 80
inline constexpr double kRingPlateauFactorVolta = 1.9;  // below

// src/graph/topo.h: NCCL's achievable rate of one NVLink, per direction, by GPU generation
// (SM70/SM80_NVLINK_BW 20.0, SM90_NVLINK_BW 20.6, SM100_NVLINK_BW 40.1), and PCI_BW (Gen3 x16).
inline constexpr double kNvlinkBw[4] = {20.0, 20.0, 20.6, 40.1};
inline constexpr double kPciBw = 12.0;
// The NVLink line rate per link and direction: 25 GB/s for NVLink 2-4 (V100 6 links = 150 GB/s,
// A100 12 = 300, H100 18 = 450 per direction, FACTS.md), 50 GB/s for NVLink 5 (B200 18 = 900).
inline constexpr double kNvlinkLineRate[4] = {25.0, 25.0, 25.0, 50.0};

// src/graph/search.cc: the channel speeds the topology search tries, fastest first.
inline constexpr double kSpeedsIntra[] = {40.0, 30.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0, 7.0, 6.0, 5.0, 4.0, 3.0};
inline constexpr double kSpeedsIntraSm90[] = {60.0, 50.0, 40.0, 30.0, 24.0, 20.0, 15.0, 12.0, 11.0, 6.0, 3.0};
inline constexpr double kSpeedsIntraSm100[] = {90.0, 80.0, 70.0, 60.0, 50.0, 45.0, 40.0, 30.0, 24.0, 20.0, 19.0, 18.0};
inline constexpr double kSpeedsInter[] = {48.0, 30.0, 28.0, 24.0, 20.0, 18.0, 15.0, 12.0, 10.0, 9.0,
                                          7.0,  6.0,  5.0,  4.0,  3.0,  2.4,  1.2,  0.24, 0.12};
inline constexpr double kSpeedsInterSm90[] = {48.0, 45.0, 42.0, 40.0, 30.0, 24.0, 22.0, 20.0, 17.5,
                                              15.0, 12.0, 6.0,  3.0,  2.4,  1.2,  0.24, 0.12};
inline constexpr double kSpeedsInterSm100[] = {96.0, 86.0, 80.0, 48.0, 45.1, 42.0, 40.0, 30.0, 24.0, 22.0,
                                               20.0, 17.5, 15.0, 12.0, 6.0,  3.0,  2.4,  1.2,  0.24, 0.12};
// src/include/device.h MAXCHANNELS 64; init.cc: rings use at most MAXCHANNELS / 2.
inline constexpr int kMaxRingChannels = 32;
// device.h NCCL_MAX_NVLS_ARITY: NVLS channels per node at most.
inline constexpr int kMaxNvlsArity = 32;

}  // namespace tandem::sim::nccl::constants
