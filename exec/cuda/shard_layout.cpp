#include "exec/cuda/shard_layout.hpp"

#include <stdexcept>
#include <string>

#include "exec/cpu/shared_memory_collectives.hpp"

namespace tandem::exec::cuda {
namespace {

using I64 = std::int64_t;

I64 product(const std::vector<I64>& shape, std::size_t begin, std::size_t end) {
  I64 p = 1;
  for (std::size_t d = begin; d < end; ++d) p *= shape[d];
  return p;
}

}  // namespace

bool ShardLayout::is_identity() const {
  if (part_numel.size() != 1) return false;
  for (std::size_t m = 0; m < members.size(); ++m) {
    const auto& segs = members[m];
    if (segs.size() != 1 || segs[0].floats != chunk || segs[0].full_offset != static_cast<I64>(m) * chunk ||
        segs[0].staging_offset != segs[0].full_offset)
      return false;
  }
  return true;
}

bool ShardLayout::has_padding() const {
  for (const auto& segs : members) {
    I64 used = 0;
    for (const Segment& s : segs) used += s.floats;
    if (used != chunk) return true;
  }
  return false;
}

ShardLayout shard_layout(const std::vector<std::vector<I64>>& shapes, int members, int dim) {
  if (members < 1) throw std::logic_error("shard layout: no members");
  ShardLayout layout;
  layout.members.resize(static_cast<std::size_t>(members));
  if (dim >= 0) {
    if (shapes.size() != 1) throw std::logic_error("parts along a dimension need a single tensor");
    const std::vector<I64>& shape = shapes[0];
    const auto d = static_cast<std::size_t>(dim);
    if (d >= shape.size() || shape[d] % members != 0)
      throw std::logic_error("parts along dimension " + std::to_string(dim) + " do not split the tensor into " +
                             std::to_string(members));
    const I64 outer = product(shape, 0, d), inner = product(shape, d + 1, shape.size());
    const I64 size = shape[d], block = size / members;
    layout.chunk = outer * block * inner;
    layout.part_numel = {layout.chunk};
    for (int m = 0; m < members; ++m)
      for (I64 o = 0; o < outer; ++o)
        layout.members[m].push_back(Segment{0, (o * size + m * block) * inner, o * block * inner,
                                            m * layout.chunk + o * block * inner, block * inner});
    return layout;
  }
  std::vector<I64> padded;  // c_j per tensor
  for (const auto& shape : shapes) {
    const I64 n = product(shape, 0, shape.size());
    padded.push_back((n + members - 1) / members);
    layout.chunk += padded.back();
    layout.part_numel.push_back(padded.back());
  }
  for (int m = 0; m < members; ++m) {
    I64 local = 0;
    for (std::size_t j = 0; j < shapes.size(); ++j) {
      const auto [lo, hi] = cpu::shard_range(product(shapes[j], 0, shapes[j].size()), members, m);
      if (hi > lo)
        layout.members[m].push_back(Segment{static_cast<int>(j), lo, 0, m * layout.chunk + local, hi - lo});
      local += padded[j];
    }
  }
  return layout;
}

}  // namespace tandem::exec::cuda
