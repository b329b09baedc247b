// Overlapped communication is not free on a GPU: an NCCL collective runs as a kernel of one
// thread block (CTA) per channel, each resident on an SM from the kernel's launch to its end
// (it spins while waiting for peers), so the kernels the compute stream runs meanwhile get the
// SMs it leaves. A GEMM sized to fill every SM then needs an extra wave: an NVIDIA developer forum
// report ("Compute-Communication Overlap Causes Severe GEMM Performance Degradation because of
// Tail Effect") times a 132-block GEMM on an H100 beside a 24-block ncclAllGather at nearly
// twice its time alone. Averaged over a training step's kernels the loss is the SM share:
// Characterizing Compute-Communication Overlap in GPU-Accelerated Distributed Deep Learning
// (arXiv 2507.03114, 2025) measures computation overlapped with collectives 18.9% slower on
// average (40% at most) over GPT and Llama layers on 4 A100s, H100s, MI250s and MI210s.
//
// The model: while a collective's kernel holds c of the GPU's S SMs, the compute stream runs at
// (S - c) / S of its speed, so each second of overlap costs c / (S - c) more. c is the channel
// count NCCL's tuner picks for that collective (sim/collectives/nccl_model.hpp; 24 of 132 on an
// H100 ring: 22% slower, the measured average's size). Not modelled: the HBM bandwidth the
// collective's copies take from memory-bound kernels, and the compute's effect on NCCL's own
// speed. Transformer Engine's userbuffers collectives are not NCCL kernels: their GEMMs are
// priced on the SMs they leave already (GemmArgs::overlap_comm_sms).
#pragma once

#include "common/units.hpp"

namespace tandem::sim {

// Extra compute time per second of overlap with a kernel holding `ctas` of `sm_count` SMs.
inline double sm_contention_per_overlap_s(int sm_count, int ctas) {
  if (ctas <= 0 || sm_count <= ctas) return 0.0;
  return static_cast<double>(ctas) / static_cast<double>(sm_count - ctas);
}

}  // namespace tandem::sim
