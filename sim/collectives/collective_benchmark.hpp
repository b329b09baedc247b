// nccl-tests on the simulator: one collective among the first `ranks` devices of a cluster (rank
// order), run as flows on the cluster's SimGrid platform (sim/platform_builder) with the NCCL
// model where the cluster describes its fabric; returns the time and nccl-tests' algorithm and
// bus bandwidths. It creates the process's SimGrid engine, so call it in a process of its own
// (SimGrid allows one engine per process): the NCCL validation cases run it in a forked child.
#pragma once

#include "platforms/cluster.hpp"
#include "sim/collectives/collective.hpp"

namespace tandem::sim {

struct CollectiveBenchmark {
  Seconds seconds = 0;                 // from the common start to the last member's end
  BytesPerSecond alg_bytes_per_s = 0;  // bytes / seconds
  BytesPerSecond bus_bytes_per_s = 0;  // alg x nccl-tests' bus factor
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::ring;  // what ran (the tuner's choice if automatic)
};

CollectiveBenchmark benchmark_collective(const Cluster& cluster, OpKind kind, Bytes bytes, int ranks,
                                         CollectiveAlgorithm algorithm = CollectiveAlgorithm::automatic);

}  // namespace tandem::sim
