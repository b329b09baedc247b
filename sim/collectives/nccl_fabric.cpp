#include "sim/collectives/nccl_fabric.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace tandem::sim {

namespace {

// NVLink generation -> the GPU generation NCCL keys its constants by (NVLink 2 on V100, 3 on
// A100, 4 on H100/H200, 5 on B200), and the line rate per link and direction (GB/s).
nccl::Arch arch_of(int nvlink_generation) {
  switch (nvlink_generation) {
    case 2: return nccl::Arch::volta;
    case 3: return nccl::Arch::ampere;
    case 4: return nccl::Arch::hopper;
    default: return nccl::Arch::blackwell;
  }
}
double line_rate_bytes_per_s(int nvlink_generation) { return (nvlink_generation >= 5 ? 50.0 : 25.0) * 1e9; }

}  // namespace

std::optional<nccl::Fabric> nccl_fabric(const NodeGroup& group) {
  if (group.fabric != IntraNodeFabric::nvswitch || group.nvlink_generation == 0) return std::nullopt;
  nccl::Fabric f;
  f.arch = arch_of(group.nvlink_generation);
  f.nvlink = true;
  f.nvswitch = true;
  // The port's per-direction bandwidth is links x line rate (A100: 12 x 25 GB/s = 300 GB/s).
  f.nvlinks_per_gpu = std::max(1, static_cast<int>(std::lround(group.intra_link.bandwidth_bytes_per_s /
                                                               line_rate_bytes_per_s(group.nvlink_generation))));
  f.nic_bytes_per_s = group.nic.bandwidth_bytes_per_s;
  f.nics_per_node = group.nic.bandwidth_bytes_per_s > 0 ? group.nic_count() : 0;  // rails, or shared NICs
  return f;
}

std::function<const nccl::Fabric*(int)> nccl_fabric_lookup(const Cluster& cluster) {
  auto fabrics = std::make_shared<std::vector<std::optional<nccl::Fabric>>>();
  for (const NodeGroup& g : cluster.groups) fabrics->push_back(nccl_fabric(g));
  auto shared = std::make_shared<const Cluster>(cluster);
  return [fabrics, shared](int rank) -> const nccl::Fabric* {
    const auto& f = (*fabrics)[shared->locate(rank).group];
    return f ? &*f : nullptr;
  };
}

std::vector<std::string> collectives_basis(const Cluster& cluster) {
  std::vector<std::string> lines;
  for (const NodeGroup& g : cluster.groups) {
    const std::optional<nccl::Fabric> fabric = nccl_fabric(g);
    const std::string line = g.device.name + ": " +
                             (fabric ? nccl::basis_of(*fabric)
                                     : "the links' nominal bandwidth and latency (the cluster describes no NCCL "
                                       "fabric for this group)");
    if (std::find(lines.begin(), lines.end(), line) == lines.end()) lines.push_back(line);
  }
  return lines;
}

}  // namespace tandem::sim
