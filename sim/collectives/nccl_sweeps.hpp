// NCCL all-reduce below its plateau, as measured on one 8-GPU NVSwitch node per GPU generation:
// nccl-tests all_reduce_perf size sweeps (in-place busbw, 1 KiB to 8 GiB, NCCL's own choice of
// algorithm and protocol). NCCL's tuner model (nccl_model.cpp) is latency + bytes / bandwidth, and
// the measured curve rises far more slowly than that between 2 MiB and 1 GiB (a 64 MiB all-reduce
// takes 1.2-1.3x the affine time on both generations). These tables are the measurement the
// model's mid-size slowdown (nccl::mid_size_slowdown) is read from; nothing else uses them.
#pragma once

#include <span>

#include "sim/collectives/nccl_model.hpp"

namespace tandem::sim::nccl {

struct SweepPoint {
  double bytes = 0;           // nccl-tests size (the all-reduced buffer)
  double bus_gb_per_s = 0;    // nccl-tests busbw, in-place
};

struct NodeSweep {
  int ranks = 8;               // GPUs of the node, one rank each
  int nvlinks_per_gpu = 0;     // the node's NVLink count per GPU (through NVSwitches)
  std::span<const SweepPoint> points;  // ascending sizes; the last is the plateau
  const char* source = "";
};

// The measured sweep of this GPU generation's NVSwitch node; empty points where none was found
// (Volta, Blackwell: no public full sweep of the same method).
NodeSweep measured_node_all_reduce(Arch arch);

}  // namespace tandem::sim::nccl
