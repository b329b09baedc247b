// Overlapped communication is not free on a GPU: an NCCL collective is a kernel that shares the
// GPU with the kernels the compute stream runs meanwhile, in two ways.
//
// SMs. It runs one thread block (CTA) per channel, each resident on an SM from the kernel's launch
// to its end (it spins while waiting for peers), so compute-bound kernels get the SMs it leaves. A
// GEMM sized to fill every SM then needs an extra wave: an NVIDIA developer forum report
// ("Compute-Communication Overlap Causes Severe GEMM Performance Degradation because of Tail
// Effect") times a 132-block GEMM on an H100 beside a 24-block ncclAllGather at nearly twice its
// time alone. Averaged over a training step's kernels the loss is the SM share: Characterizing
// Compute-Communication Overlap in GPU-Accelerated Distributed Deep Learning (arXiv 2507.03114,
// 2025) measures computation overlapped with collectives 18.9% slower on average (40% at most)
// over GPT and Llama layers on 4 A100s, H100s, MI250s and MI210s. While a collective's kernel holds
// c of the GPU's S SMs, a compute-bound kernel runs at (S - c) / S of its speed: each second of
// overlap costs c / (S - c) more. c is the channel count NCCL's tuner picks for that collective
// (sim/collectives/nccl_model.hpp; 24 of 132 on an H100 ring: 22%, the measured average's size),
// or the channels of a send or receive (nccl::send_recv_channels: 2 to a peer on another node).
//
// HBM. While its data moves, the collective reads and writes this GPU's memory. In NCCL's ring each
// step's chunk is written into this GPU's buffer by its predecessor (NVLink or the NIC), then read
// back beside this GPU's own data and reduced or copied on (recvReduceSend, recvCopySend): three
// local accesses per byte the ring moves through the GPU, whose count per rank is nccl-tests' bus
// bytes (the collective's bytes x its bus factor); a point-to-point transfer reads (or writes) its
// bytes once. A memory-bound kernel then gets the HBM bandwidth the collective leaves, at least half
// (two streams at the memory controllers each keep a fair share). Memory-bound kernels are taken to
// need no more than the SMs the collective leaves, compute-bound ones no more than the bandwidth.
//
// Not modelled: what the computation costs NCCL's own speed. Transformer Engine's userbuffers
// collectives are not NCCL kernels: their GEMMs are priced on the SMs they leave already
// (GemmArgs::overlap_comm_sms).
#pragma once

#include <algorithm>

#include "common/units.hpp"

namespace tandem::sim {

// Extra compute time per second of overlap with a kernel holding `ctas` of `sm_count` SMs.
inline double sm_contention_per_overlap_s(int sm_count, int ctas) {
  if (ctas <= 0 || sm_count <= ctas) return 0.0;
  return static_cast<double>(ctas) / static_cast<double>(sm_count - ctas);
}

// Local HBM accesses per byte of a collective's bus bytes (the ring's receive, then its read beside
// this GPU's own data), and per byte of a point-to-point transfer.
inline constexpr double kRingHbmAccessesPerBusByte = 3.0;
inline constexpr double kPointToPointHbmAccessesPerByte = 1.0;

// Extra time per second a memory-bound kernel overlaps a transfer that moves `used` bytes/s through
// an HBM whose kernels reach `achievable` bytes/s: it gets what is left, at least half.
inline double hbm_contention_per_overlap_s(BytesPerSecond achievable, BytesPerSecond used) {
  if (!(achievable > 0) || !(used > 0)) return 0.0;
  return achievable / std::max(achievable - used, achievable / 2) - 1.0;
}

}  // namespace tandem::sim
