// What a checkpoint costs on a modeled storage system. Every node of the job writes (and on
// restart reads) an equal share of the checkpoint, as sharded checkpointing does; each node's
// share crosses its own link into the storage network and all of them share the storage's
// aggregate bandwidth, less what other jobs already use of it (contention). Max-min fair sharing
// of that star (the model SimGrid's network uses) gives every node min(its link, free aggregate /
// nodes): the slower of the two bounds below sets the time.
#pragma once

#include <cstdint>

#include "common/units.hpp"
#include "strategies/tensor.hpp"

namespace tandem::sim::reliability {

struct StorageSystem {
  BytesPerSecond aggregate_bytes_per_s = 0;  // the file system's sustained throughput
  BytesPerSecond per_node_bytes_per_s = 0;   // one node's path into it
  Seconds latency_s = 0;                     // open/commit of one checkpoint
  double background_load = 0;                // fraction of the aggregate other jobs use, in [0, 1)
};

// Bytes a checkpoint holds: the weights in the training dtype plus Adam's fp32 state (master
// weights when training in 16 bits, m and v): 2 + 4 + 4 + 4 = 14 bytes per parameter in bf16/fp16,
// 4 + 4 + 4 = 12 in fp32 (the 16 bytes per parameter of Rajbhandari et al., ZeRO, SC'20, less
// the gradients, which a checkpoint does not keep).
Bytes checkpoint_bytes(std::int64_t parameters, DType precision);

// Seconds to move `total` bytes, spread evenly over `nodes`, to or from storage.
Seconds storage_transfer_s(const StorageSystem& storage, Bytes total, int nodes);

}  // namespace tandem::sim::reliability
