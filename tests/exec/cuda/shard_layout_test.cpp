// The member-major staging layout that NCCL's reduce-scatter and all-gather run on
// (exec/cuda/shard_layout.hpp) against the sharding convention of CommShards (strategies/op.hpp),
// written out independently here: a bucket splits tensor by tensor (shard_range of each
// tensor, never of the concatenation) and parts along a dimension are blocks of it. A host
// emulation of NCCL (chunk m of the staging buffer is member m's) must give every member
// exactly its parts. Pure arithmetic: runs without a GPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "exec/cpu/shared_memory_collectives.hpp"
#include "exec/cuda/shard_layout.hpp"

namespace tandem::exec::cuda {
namespace {

using I64 = std::int64_t;
using Values = std::vector<std::vector<float>>;  // per tensor

I64 numel(const std::vector<I64>& shape) {
  I64 n = 1;
  for (I64 d : shape) n *= d;
  return n;
}

// Member m's tensors: distinct values per (member, tensor, element).
Values member_values(const std::vector<std::vector<I64>>& shapes, int m) {
  Values v;
  for (std::size_t j = 0; j < shapes.size(); ++j) {
    v.emplace_back(static_cast<std::size_t>(numel(shapes[j])));
    for (std::size_t i = 0; i < v.back().size(); ++i) v.back()[i] = static_cast<float>(1000 * m + 100 * j + i % 97);
  }
  return v;
}

// NCCL's reduce-scatter on the staging layout: every member packs all its segments, the
// chunks are summed, member `me` unpacks its own chunk into its parts.
Values emulated_reduce_scatter(const ShardLayout& layout, const std::vector<Values>& full, int me) {
  const int members = static_cast<int>(full.size());
  std::vector<float> reduced(static_cast<std::size_t>(layout.chunk * members), 0.0f);
  for (int m = 0; m < members; ++m)
    for (const auto& segs : layout.members)
      for (const Segment& s : segs)
        for (I64 i = 0; i < s.floats; ++i) reduced[s.staging_offset + i] += full[m][s.tensor][s.full_offset + i];
  Values parts;
  for (I64 n : layout.part_numel) parts.emplace_back(static_cast<std::size_t>(n), 0.0f);
  for (const Segment& s : layout.members[me])
    for (I64 i = 0; i < s.floats; ++i) parts[s.tensor][s.part_offset + i] = reduced[s.staging_offset + i];
  return parts;
}

// NCCL's all-gather: every member packs its own parts into its chunk; everyone unpacks all.
Values emulated_all_gather(const ShardLayout& layout, const std::vector<Values>& parts,
                           const std::vector<std::vector<I64>>& shapes) {
  std::vector<float> staging(static_cast<std::size_t>(layout.chunk * static_cast<I64>(parts.size())), -1.0f);
  for (std::size_t m = 0; m < parts.size(); ++m)
    for (const Segment& s : layout.members[m])
      for (I64 i = 0; i < s.floats; ++i) staging[s.staging_offset + i] = parts[m][s.tensor][s.part_offset + i];
  Values full;
  for (const auto& shape : shapes) full.emplace_back(static_cast<std::size_t>(numel(shape)), -2.0f);
  for (const auto& segs : layout.members)
    for (const Segment& s : segs)
      for (I64 i = 0; i < s.floats; ++i) full[s.tensor][s.full_offset + i] = staging[s.staging_offset + i];
  return full;
}

TEST(ShardLayout, ABucketIsShardedTensorByTensorNotAsItsConcatenation) {
  const std::vector<std::vector<I64>> shapes{{10}, {3, 3}, {2}, {16}};  // 10, 9, 2 (< members), 16
  const int members = 3;
  const ShardLayout layout = shard_layout(shapes, members, -1);
  EXPECT_EQ(layout.chunk, 4 + 3 + 1 + 6);  // Σ ceil(n_j / 3)
  EXPECT_FALSE(layout.is_identity());
  EXPECT_TRUE(layout.has_padding());
  std::vector<Values> full;
  for (int m = 0; m < members; ++m) full.push_back(member_values(shapes, m));
  for (int me = 0; me < members; ++me) {
    const Values parts = emulated_reduce_scatter(layout, full, me);
    for (std::size_t j = 0; j < shapes.size(); ++j) {
      const auto [lo, hi] = cpu::shard_range(numel(shapes[j]), members, me);
      for (I64 i = lo; i < hi; ++i) {
        float want = 0;
        for (int m = 0; m < members; ++m) want += full[m][j][i];
        EXPECT_EQ(parts[j][i - lo], want) << "member " << me << " tensor " << j << " element " << i;
      }
    }
  }
}

TEST(ShardLayout, AllGatherOfEveryMembersPartsRebuildsEachTensor) {
  const std::vector<std::vector<I64>> shapes{{7}, {12}, {1}};
  const int members = 4;
  const ShardLayout layout = shard_layout(shapes, members, -1);
  const Values whole = member_values(shapes, 5);
  std::vector<Values> parts(members);
  for (int m = 0; m < members; ++m)
    for (std::size_t j = 0; j < shapes.size(); ++j) {
      const auto [lo, hi] = cpu::shard_range(numel(shapes[j]), members, m);
      parts[m].emplace_back(whole[j].begin() + lo, whole[j].begin() + hi);
      parts[m].back().resize(static_cast<std::size_t>(layout.part_numel[j]), 0.0f);
    }
  EXPECT_EQ(emulated_all_gather(layout, parts, shapes), whole);
}

TEST(ShardLayout, PartsAlongTheSequenceDimensionAreBlocksOfIt) {
  const std::vector<I64> shape{3, 8, 5};  // [b, s, h], split along s
  const int members = 4, block = 2;
  const ShardLayout layout = shard_layout({shape}, members, 1);
  EXPECT_EQ(layout.chunk, 3 * block * 5);
  EXPECT_FALSE(layout.is_identity());  // b > 1: the blocks interleave
  EXPECT_FALSE(layout.has_padding());
  std::vector<Values> full;
  for (int m = 0; m < members; ++m) full.push_back(member_values({shape}, m));
  for (int me = 0; me < members; ++me) {
    const Values parts = emulated_reduce_scatter(layout, full, me);
    for (I64 b = 0; b < 3; ++b)
      for (I64 r = 0; r < block; ++r)
        for (I64 h = 0; h < 5; ++h) {
          const I64 at = (b * 8 + me * block + r) * 5 + h;
          float want = 0;
          for (int m = 0; m < members; ++m) want += full[m][0][at];
          EXPECT_EQ(parts[0][(b * block + r) * 5 + h], want) << "member " << me;
        }
  }
  std::vector<Values> own(members);  // member m's blocks of full[0], by the definition
  for (int m = 0; m < members; ++m) {
    own[m] = {std::vector<float>(static_cast<std::size_t>(layout.chunk))};
    for (I64 b = 0; b < 3; ++b)
      for (I64 r = 0; r < block * 5; ++r) own[m][0][b * block * 5 + r] = full[0][0][(b * 8 + m * block) * 5 + r];
  }
  EXPECT_EQ(emulated_all_gather(layout, own, {shape}), full[0]);
}

TEST(ShardLayout, OneTensorWithEvenPartsIsItsOwnStaging) {
  EXPECT_TRUE(shard_layout({{4, 6}}, 4, -1).is_identity());
  EXPECT_TRUE(shard_layout({{8, 3}}, 4, 0).is_identity());  // blocks along the leading dimension
  EXPECT_TRUE(shard_layout({{1, 8, 3}}, 4, 1).is_identity());
  EXPECT_FALSE(shard_layout({{25}}, 4, -1).is_identity());
  EXPECT_FALSE(shard_layout({{8}, {8}}, 4, -1).is_identity());
}

TEST(ShardLayout, RefusesPartsThatDoNotSplitTheDimension) {
  EXPECT_THROW(shard_layout({{2, 6, 3}}, 4, 1), std::logic_error);
  EXPECT_THROW(shard_layout({{2, 8}}, 4, 2), std::logic_error);
  EXPECT_THROW(shard_layout({{8}, {8}}, 2, 0), std::logic_error);
}

}  // namespace
}  // namespace tandem::exec::cuda
