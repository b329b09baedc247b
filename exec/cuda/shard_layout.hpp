// Where each member's part of a reduce-scatter or all-gather sits, for NCCL: the sharding
// convention of CommShards (strategies/op.hpp), mapped onto NCCL's one flat buffer of `members`
// equal chunks (chunk m is member m's part).
//
//   dim < 0   every tensor of the bucket is split on its own: member m's chunk holds part m
//             (shard_range(n_j, members, m), exec/cpu/shared_memory_collectives.hpp) of tensor
//             0, then of tensor 1, ..., each padded to c_j = ceil(n_j / members), so
//             chunk = Σ c_j. (Sharding the concatenation instead would give members other
//             elements than the CPU backend and the strategies' ZeRO bookkeeping expect.)
//   dim >= 0  one tensor, blocks along dimension `dim`: member m's chunk holds, for every index
//             o of the dimensions before `dim`, the rows [m·k, (m+1)·k) of it (k = size /
//             members), in order: the member-major staging of the CPU backend.
//
// Each Segment is one contiguous run of floats copied between a tensor and the staging buffer;
// `part_offset` is where it sits in the member's out-of-place part (CommShards::tensors). Pure
// host arithmetic (no CUDA), so it is tested without a GPU.
#pragma once

#include <cstdint>
#include <vector>

namespace tandem::exec::cuda {

struct Segment {
  int tensor = 0;                   // index in the op's tensors (bucket order)
  std::int64_t full_offset = 0;     // in the whole tensor
  std::int64_t part_offset = 0;     // in the member's part of that tensor
  std::int64_t staging_offset = 0;  // in the staging buffer (members · chunk floats)
  std::int64_t floats = 0;
};

struct ShardLayout {
  std::int64_t chunk = 0;                      // floats per member: NCCL's count
  std::vector<std::vector<Segment>> members;  // per member, in staging order
  std::vector<std::int64_t> part_numel;        // per tensor: the largest member's part

  // The staging buffer is the (single) tensor itself: NCCL can run on it in place.
  bool is_identity() const;
  // Some staging floats belong to no tensor (uneven parts): staging must be zeroed.
  bool has_padding() const;
};

// Throws std::logic_error when the parts along `dim` do not split the tensor.
ShardLayout shard_layout(const std::vector<std::vector<std::int64_t>>& shapes, int members, int dim);

}  // namespace tandem::exec::cuda
