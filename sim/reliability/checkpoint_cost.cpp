#include "sim/reliability/checkpoint_cost.hpp"

#include <algorithm>
#include <stdexcept>

namespace tandem::sim::reliability {

Bytes checkpoint_bytes(std::int64_t parameters, DType precision) {
  const double per_parameter = precision == DType::fp32 ? 12 : 14;
  return static_cast<double>(parameters) * per_parameter;
}

Seconds storage_transfer_s(const StorageSystem& storage, Bytes total, int nodes) {
  if (nodes < 1) throw std::invalid_argument("storage transfer: at least one node");
  if (!(storage.aggregate_bytes_per_s > 0) || !(storage.per_node_bytes_per_s > 0))
    throw std::invalid_argument("storage transfer: bandwidths must be positive");
  if (!(storage.background_load >= 0 && storage.background_load < 1))
    throw std::invalid_argument("storage transfer: background load must be in [0, 1)");
  const BytesPerSecond free_aggregate = storage.aggregate_bytes_per_s * (1 - storage.background_load);
  const BytesPerSecond per_node = std::min(storage.per_node_bytes_per_s, free_aggregate / nodes);
  return storage.latency_s + total / nodes / per_node;
}

}  // namespace tandem::sim::reliability
