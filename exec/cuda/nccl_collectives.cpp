#include "exec/cuda/nccl_collectives.hpp"

#include <nccl.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "kernels/cuda/check.hpp"

#define NCCL_CHECK(call)                                                                                   \
  do {                                                                                                     \
    const ncclResult_t tandem_nccl_ = (call);                                                              \
    if (tandem_nccl_ != ncclSuccess)                                                                       \
      ::tandem::kernels::cuda::throw_cuda_error(#call, ncclGetErrorString(tandem_nccl_), __FILE__, __LINE__); \
  } while (0)

namespace tandem::exec::cuda {
namespace {

using I64 = std::int64_t;

ncclComm_t nc(void* c) { return static_cast<ncclComm_t>(c); }

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return ncclSum;
    case ReduceOp::avg: return ncclAvg;
    case ReduceOp::max: return ncclMax;
  }
  return ncclSum;
}

I64 flat_size(const DeviceBuffer& b) {
  I64 n = 0;
  for (const DeviceSpan& s : b) n += s.size;
  return n;
}

// Copies the flat range [begin, end) of `buffer` to (pack) or from (unpack) dst/src at the same
// offsets relative to `begin`.
void copy_range(const DeviceBuffer& buffer, float* staging, I64 begin, I64 end, bool pack, cudaStream_t stream) {
  I64 offset = 0;
  for (const DeviceSpan& s : buffer) {
    const I64 lo = std::max(begin, offset), hi = std::min(end, offset + s.size);
    if (lo < hi) {
      float* flat = staging + (lo - begin);
      float* own = s.data + (lo - offset);
      CUDA_CHECK(cudaMemcpyAsync(pack ? flat : own, pack ? own : flat, sizeof(float) * (hi - lo),
                                 cudaMemcpyDeviceToDevice, stream));
    }
    offset += s.size;
  }
}

}  // namespace

NcclCollectives::NcclCollectives(Bootstrap& bootstrap, Staging staging)
    : bootstrap_(bootstrap), staging_(std::move(staging)) {
  ncclUniqueId id;
  std::vector<int> all(static_cast<std::size_t>(bootstrap_.world_size()));
  for (int r = 0; r < bootstrap_.world_size(); ++r) all[r] = r;
  if (bootstrap_.rank() == 0) NCCL_CHECK(ncclGetUniqueId(&id));
  bootstrap_.share(&id, sizeof id, all, /*tag=*/0);
  ncclComm_t comm = nullptr;
  NCCL_CHECK(ncclCommInitRank(&comm, bootstrap_.world_size(), id, bootstrap_.rank()));
  world_ = comm;
}

NcclCollectives::~NcclCollectives() {
  for (auto& [id, comm] : groups_)
    if (comm != world_) ncclCommDestroy(nc(comm));
  if (world_) ncclCommDestroy(nc(world_));
}

void* NcclCollectives::comm_for(const Group& group) {
  bool whole_world = group.size() == bootstrap_.world_size();  // in rank order: slices match
  for (int i = 0; whole_world && i < group.size(); ++i) whole_world = group.ranks[i] == i;
  if (whole_world) return world_;
  auto it = groups_.find(group.id);
  if (it != groups_.end()) return it->second;
  const int index = group.index_of(bootstrap_.rank());
  if (index < 0) throw std::logic_error("rank " + std::to_string(bootstrap_.rank()) + " is not in group " +
                                        std::to_string(group.id));
  ncclUniqueId id;
  if (index == 0) NCCL_CHECK(ncclGetUniqueId(&id));
  bootstrap_.share(&id, sizeof id, group.ranks, /*tag=*/1 + group.id);
  ncclComm_t comm = nullptr;
  NCCL_CHECK(ncclCommInitRank(&comm, group.size(), id, index));
  groups_[group.id] = comm;
  return comm;
}

void NcclCollectives::run(const CommOp& op, const DeviceBuffer& buffer, cudaStream_t stream) {
  const I64 size = flat_size(buffer);
  const bool single = buffer.size() == 1;
  if (op.kind == OpKind::send || op.kind == OpKind::recv) {
    float* data = single ? buffer[0].data : staging_.allocate(size);
    if (!single && op.kind == OpKind::send) copy_range(buffer, data, 0, size, true, stream);
    if (op.kind == OpKind::send) NCCL_CHECK(ncclSend(data, static_cast<std::size_t>(size), ncclFloat32, op.peer, nc(world_), stream));
    else NCCL_CHECK(ncclRecv(data, static_cast<std::size_t>(size), ncclFloat32, op.peer, nc(world_), stream));
    if (!single) {
      if (op.kind == OpKind::recv) copy_range(buffer, data, 0, size, false, stream);
      staging_.free_after(data, stream);
    }
    return;
  }
  if (!is_collective(op.kind)) throw std::logic_error(std::string("not a communication op: ") + to_string(op.kind));
  ncclComm_t comm = nc(comm_for(op.group));
  const I64 n = op.group.size();
  const I64 index = op.group.index_of(bootstrap_.rank());
  const I64 slice = (size + n - 1) / n;  // shard_range: ceil slices, the last ones shorter
  const bool even = slice * n == size;
  const auto count = [](I64 v) { return static_cast<std::size_t>(v); };

  switch (op.kind) {
    case OpKind::all_reduce:
    case OpKind::broadcast: {
      float* data = single ? buffer[0].data : staging_.allocate(size);
      if (!single) copy_range(buffer, data, 0, size, true, stream);
      if (op.kind == OpKind::all_reduce) {
        NCCL_CHECK(ncclAllReduce(data, data, count(size), ncclFloat32, nccl_op(op.reduce), comm, stream));
      } else {
        const int root = op.group.index_of(op.root);
        if (root < 0) throw std::logic_error("broadcast root " + std::to_string(op.root) + " is not in the group");
        NCCL_CHECK(ncclBroadcast(data, data, count(size), ncclFloat32, root, comm, stream));
      }
      if (!single) {
        copy_range(buffer, data, 0, size, false, stream);
        staging_.free_after(data, stream);
      }
      return;
    }
    case OpKind::reduce_scatter:
    case OpKind::all_gather: {
      const bool direct = single && even;
      float* data = direct ? buffer[0].data : staging_.allocate(slice * n);
      const I64 begin = std::min(index * slice, size), end = std::min(begin + slice, size);
      if (!direct) {
        CUDA_CHECK(cudaMemsetAsync(data, 0, sizeof(float) * count(slice * n), stream));
        if (op.kind == OpKind::reduce_scatter) copy_range(buffer, data, 0, size, true, stream);
        else copy_range(buffer, data + begin, begin, end, true, stream);
      }
      if (op.kind == OpKind::reduce_scatter)
        NCCL_CHECK(ncclReduceScatter(data, data + index * slice, count(slice), ncclFloat32, nccl_op(op.reduce), comm,
                                     stream));
      else
        NCCL_CHECK(ncclAllGather(data + index * slice, data, count(slice), ncclFloat32, comm, stream));
      if (!direct) {
        if (op.kind == OpKind::reduce_scatter) copy_range(buffer, data + begin, begin, end, false, stream);
        else copy_range(buffer, data, 0, size, false, stream);
        staging_.free_after(data, stream);
      }
      return;
    }
    case OpKind::all_to_all: {
      if (size % n) throw std::logic_error("all_to_all: the buffer does not split into " + std::to_string(n) + " chunks");
      const I64 chunk = size / n;
      float* send = staging_.allocate(size);  // the exchange is in place: stage a copy to send from
      copy_range(buffer, send, 0, size, true, stream);
      float* recv = single ? buffer[0].data : staging_.allocate(size);
      NCCL_CHECK(ncclGroupStart());
      for (I64 j = 0; j < n; ++j) {
        NCCL_CHECK(ncclSend(send + j * chunk, count(chunk), ncclFloat32, static_cast<int>(j), comm, stream));
        NCCL_CHECK(ncclRecv(recv + j * chunk, count(chunk), ncclFloat32, static_cast<int>(j), comm, stream));
      }
      NCCL_CHECK(ncclGroupEnd());
      if (!single) {
        copy_range(buffer, recv, 0, size, false, stream);
        staging_.free_after(recv, stream);
      }
      staging_.free_after(send, stream);
      return;
    }
    default:
      throw std::logic_error(std::string("not a collective: ") + to_string(op.kind));
  }
}

}  // namespace tandem::exec::cuda
