#include "exec/cuda/nccl_collectives.hpp"

#include <nccl.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "exec/cuda/shard_layout.hpp"
#include "kernels/cuda/check.hpp"
#include "kernels/cuda/elementwise.cuh"

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

void NcclCollectives::sharded(const CommOp& op, const DeviceBuffer& full, const DeviceBuffer& parts, void* comm_handle,
                              int members, int me, cudaStream_t stream) {
  const std::vector<Tensor>& tensors = op.bucket.empty() ? std::vector<Tensor>{op.buffer} : op.bucket;
  if (tensors.size() != full.size()) throw std::logic_error("collective: one device span per tensor");
  const bool out_of_place = !parts.empty();
  if (out_of_place && parts.size() != full.size())
    throw std::logic_error("collective with " + std::to_string(full.size()) + " tensors and " +
                           std::to_string(parts.size()) + " parts");
  if (!out_of_place && op.shards.dim >= 0) throw std::logic_error("parts along a dimension need part tensors");
  std::vector<std::vector<I64>> shapes;
  for (const Tensor& t : tensors) shapes.push_back(t.shape);
  const ShardLayout layout = shard_layout(shapes, members, op.shards.dim);
  for (std::size_t j = 0; out_of_place && j < parts.size(); ++j)
    for (const Segment& seg : layout.members[static_cast<std::size_t>(me)])
      if (seg.tensor == static_cast<int>(j) && parts[j].size < seg.part_offset + seg.floats)
        throw std::logic_error("part " + std::to_string(j) + " is smaller than its share");
  ncclComm_t comm = nc(comm_handle);
  const bool reduce = op.kind == OpKind::reduce_scatter;
  const auto count = static_cast<std::size_t>(layout.chunk);
  const auto& mine = layout.members[static_cast<std::size_t>(me)];
  // Where this member's segment lives on its side: its out-of-place part or its place in the tensor.
  auto own = [&](const Segment& seg) {
    return out_of_place ? parts[seg.tensor].data + seg.part_offset : full[seg.tensor].data + seg.full_offset;
  };
  auto copy = [&](float* dst, const float* src, I64 floats) {
    if (dst != src && floats > 0)
      CUDA_CHECK(cudaMemcpyAsync(dst, src, sizeof(float) * static_cast<std::size_t>(floats), cudaMemcpyDeviceToDevice,
                                 stream));
  };
  if (layout.chunk == 0) return;
  // One tensor whose member-major layout is its own (even element-wise parts, or blocks along
  // the leading dimension): NCCL reads and writes it directly.
  if (layout.is_identity() && !(reduce && op.shards.accumulate)) {
    float* data = full[0].data;
    float* part = out_of_place ? parts[0].data : data + me * layout.chunk;
    if (reduce) NCCL_CHECK(ncclReduceScatter(data, part, count, ncclFloat32, nccl_op(op.reduce), comm, stream));
    else NCCL_CHECK(ncclAllGather(part, data, count, ncclFloat32, comm, stream));
    return;
  }
  float* staging = staging_.allocate(layout.chunk * members);
  if (layout.has_padding())
    CUDA_CHECK(cudaMemsetAsync(staging, 0, sizeof(float) * count * static_cast<std::size_t>(members), stream));
  float* my_chunk = staging + me * layout.chunk;
  if (reduce) {
    for (const auto& segs : layout.members)
      for (const Segment& seg : segs) copy(staging + seg.staging_offset, full[seg.tensor].data + seg.full_offset, seg.floats);
    NCCL_CHECK(ncclReduceScatter(staging, my_chunk, count, ncclFloat32, nccl_op(op.reduce), comm, stream));
    for (const Segment& seg : mine) {
      float* dst = own(seg);
      if (op.shards.accumulate && out_of_place)
        kernels::cuda::add_forward(dst, dst, staging + seg.staging_offset, seg.floats, seg.floats, stream);
      else
        copy(dst, staging + seg.staging_offset, seg.floats);
    }
  } else {
    for (const Segment& seg : mine) copy(staging + seg.staging_offset, own(seg), seg.floats);
    NCCL_CHECK(ncclAllGather(my_chunk, staging, count, ncclFloat32, comm, stream));
    for (const auto& segs : layout.members)
      for (const Segment& seg : segs) copy(full[seg.tensor].data + seg.full_offset, staging + seg.staging_offset, seg.floats);
  }
  staging_.free_after(staging, stream);
}

void NcclCollectives::run(const CommOp& op, const DeviceBuffer& buffer, const DeviceBuffer& parts,
                          cudaStream_t stream) {
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
    case OpKind::all_gather:
      sharded(op, buffer, parts, comm, static_cast<int>(n), static_cast<int>(index), stream);
      return;
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
