// The workloads calibration measures (analysis/calibration/microbenchmarks.hpp), written against
// the per-rank interface so that any backend runs them:
//
//   compute   single-device training steps of small GPTs and MLPs over a grid of sizes (hidden
//             width, sequence length, micro-batch): each step issues GEMMs of many shapes,
//             attention, norms, element-wise kernels, embedding, loss and the optimizer, i.e.
//             every compute kind over a range of sizes, with the caches in the state a training
//             step leaves them in;
//   comm      one kind of communication (send/recv, all-reduce, all-gather, reduce-scatter,
//             broadcast) over a group of n devices, once per message size per step, each op
//             waited for before the next, so the ops never overlap.
//
// The grids are sized for CPUs: the quick grid runs in a few seconds on two loaded cores, the full
// one in well under a minute. A GPU backend scales them up (the size factors are parameters).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "analysis/calibration/microbenchmarks.hpp"

namespace tandem::calibration {

// `precision`: the dtype the steps train in (fp32 on CPUs). `replicas` data-parallel replicas
// run the step side by side (one gradient all-reduce per step joins them). The GPU scale: GPT
// layers of hidden 1024-4096 (head dim 128), sequences 512-2048, micro-batches 1-4, and MLPs of
// width 4096-8192: GEMMs from ~1e9 to ~1e12 FLOPs, element-wise kernels from MBs to GBs.
std::vector<Workload> compute_workloads(bool quick, DType precision = DType::fp32, int replicas = 1,
                                        WorkloadScale scale = WorkloadScale::cpu);

// Message sizes of the communication grid (payload bytes, nccl-tests sense); on GPUs 64 KiB to
// 256 MiB (where NCCL goes from latency-bound to its bus bandwidth).
std::vector<Bytes> comm_sizes_bytes(bool quick, WorkloadScale scale = WorkloadScale::cpu);

// A step of `kind` ops on `group_size` devices (ranks 0..n-1), one per size. For send/recv the
// group must be 2: rank 0 sends, rank 1 receives. Labels are "comm.<kind>.<bytes>".
Workload comm_workload(OpKind kind, int group_size, const std::vector<Bytes>& sizes_bytes);

// The kernel class of every compute op rank 0 of the workload issues in a step, by op label
// (found by running the rank's program on a runtime that only records).
std::map<std::string, std::string> kernel_classes(const Workload& workload);

// The communication kinds calibration measures.
std::vector<OpKind> calibrated_comm_kinds();

}  // namespace tandem::calibration
