// NCCL bus-bandwidth validation cases (validation/nccl/*.yaml): one collective on a cluster with
// the bus bandwidth NVIDIA or nccl-tests users published for it, and exactly where. Predicted by
// the simulated nccl-tests (collective_benchmark.hpp: flows on the modeled links, NCCL model).
//
//   name: dgx-h100-all-reduce-ring
//   cluster: dgx-h100                 # bundled name, or a path relative to the case file
//   collective: all_reduce            # all_reduce, all_gather, reduce_scatter, broadcast
//   bytes: 8589934592                 # nccl-tests size (the largest of the published sweep)
//   group_size: 8                     # the first group_size ranks of the cluster
//   algorithm: ring                   # as published (NCCL_ALGO=...); automatic: NCCL's choice
//   published_bus_bandwidth_gb_per_s: 370
//   band_pct: 5                       # |error| CI asserts
//   source: "nccl-tests issue #212, ..."
//   hardware: "..."  note: "..."      # optional
#pragma once

#include <string>
#include <vector>

#include "platforms/cluster.hpp"
#include "sim/collectives/collective.hpp"

namespace tandem::sim {

struct NcclCase {
  std::string file;
  std::string name;
  std::string cluster;  // as written
  OpKind collective = OpKind::all_reduce;
  Bytes bytes = 0;
  int group_size = 2;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::automatic;
  double published_bus_gb_per_s = 0;
  double band_pct = 5;
  std::string source, hardware, note;

  Cluster load_cluster() const;  // resolves `cluster` (bundled name or path beside the case)
};

// InputError (file, line, field) on bad input.
NcclCase load_nccl_case(const std::string& path);
// validation/nccl/*.yaml (sorted), or another folder's.
std::vector<std::string> nccl_case_files(const std::string& dir = "");

}  // namespace tandem::sim
