// Writing calibrated platforms: a device profile (the schema of platforms/README.md, with its
// `efficiency_curves:` and `calibrated:` sections) and a single-node cluster whose devices use it
// and whose intra-node link is the fitted one. Both load back with load_device_profile /
// load_cluster to what was written; files are replaced atomically.
#pragma once

#include <string>
#include <vector>

#include "platforms/cluster.hpp"
#include "platforms/device.hpp"

namespace tandem::calibration {

std::string device_profile_yaml(const DeviceProfile& profile, const std::string& description);

struct CalibratedCluster {
  std::string name;              // e.g. "localhost-calibrated"
  std::string description;
  std::string device;            // a profile name, or a path relative to the cluster file
  int devices_per_node = 2;
  LinkSpec intra_link;           // device-to-device (fitted)
  LinkSpec bus;                  // the memory bus all devices share
  int shared_cores = 0;          // the cores the devices (threads) share; 0: not written
  std::vector<CollectiveCost> collectives;  // measured collective costs; none: not written
};
std::string cluster_yaml(const CalibratedCluster& cluster);

}  // namespace tandem::calibration
