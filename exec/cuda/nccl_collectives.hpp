// The CUDA backend's communication: NCCL on the stream the strategy chose, with the conventions
// of exec/cpu/shared_memory_collectives.hpp and CommShards (strategies/op.hpp): all-reduce,
// broadcast and send/recv treat a bucket of tensors as one flat buffer; reduce-scatter and
// all-gather split EACH tensor on its own (member i's part shard_range(n_j, members, i), or
// blocks along CommShards::dim), in place (the part at its position in the tensor) or out of
// place (CommShards::tensors, the reduce-scatter adding into them when `accumulate`), through
// the member-major staging of shard_layout.hpp; all-to-all swaps n equal chunks.
//
// Communicators: one over all ranks (created at start, collectively; it also carries pipeline
// send/recv between any two ranks) and one per group id, created on the group's first
// collective: its first member makes the NCCL unique id and hands it over through the
// bootstrap (MPI), then every member joins. A group of all ranks reuses the world communicator.
// Strategies issue a group's first collective in the same program order on its members, so
// the joins meet; a strategy that would first use two groups in opposite orders on two ranks
// would deadlock here (none does).
//
// Buffers: a single tensor whose member-major layout is its own (even parts) is used directly;
// a bucket, uneven parts or blocks along an inner dimension go through a contiguous staging
// buffer (zero-padded to n equal chunks) packed and unpacked on the same stream.
#pragma once

#include <cuda_runtime.h>

#include <functional>
#include <map>
#include <vector>

#include "exec/cuda/bootstrap.hpp"
#include "strategies/op.hpp"

namespace tandem::exec::cuda {

struct DeviceSpan {
  float* data = nullptr;
  std::int64_t size = 0;  // floats
};
using DeviceBuffer = std::vector<DeviceSpan>;

// Stream-ordered scratch for staging: allocate, and free once the stream has passed this point.
struct Staging {
  std::function<float*(std::int64_t floats)> allocate;
  std::function<void(float*, cudaStream_t)> free_after;
};

class NcclCollectives {
 public:
  NcclCollectives(Bootstrap& bootstrap, Staging staging);
  ~NcclCollectives();
  NcclCollectives(const NcclCollectives&) = delete;
  NcclCollectives& operator=(const NcclCollectives&) = delete;

  // Enqueues `op` (a collective or send/recv) on `stream`: `buffer` holds the op's tensors
  // (bucket order, or CommOp::buffer), `parts` its out-of-place parts (CommShards::tensors;
  // empty: in place). Throws on a malformed op or an NCCL error (naming the call).
  void run(const CommOp& op, const DeviceBuffer& buffer, const DeviceBuffer& parts, cudaStream_t stream);

 private:
  void sharded(const CommOp& op, const DeviceBuffer& full, const DeviceBuffer& parts, void* comm, int members, int me,
               cudaStream_t stream);
  void* comm_for(const Group& group);  // ncclComm_t
  Bootstrap& bootstrap_;
  Staging staging_;
  void* world_ = nullptr;
  std::map<int, void*> groups_;
};

}  // namespace tandem::exec::cuda
