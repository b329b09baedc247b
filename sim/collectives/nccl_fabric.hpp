// NCCL's view of a cluster's node group (nccl_model.hpp's Fabric), read from the cluster
// description: NVLink generation and port bandwidth give the GPU generation and link count, the
// NIC its rate. A group the model does not describe (PCIe, CPU threads, NVLink generation not
// stated) has none: its collectives keep the links' figures as achievable.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "platforms/cluster.hpp"
#include "sim/collectives/nccl_model.hpp"

namespace tandem::sim {

std::optional<nccl::Fabric> nccl_fabric(const NodeGroup& group);

// TopologyView::nccl_fabric_of for a cluster: rank -> its group's fabric (null where none).
std::function<const nccl::Fabric*(int)> nccl_fabric_lookup(const Cluster& cluster);

// What times the cluster's collectives, "DEVICE: ..." once per distinct line: the NCCL model's
// basis (nccl::basis_of) for a group with a fabric, the links' nominal figures for one without.
std::vector<std::string> collectives_basis(const Cluster& cluster);

}  // namespace tandem::sim
