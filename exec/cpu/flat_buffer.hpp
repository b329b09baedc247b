// The buffers a CPU-backend collective moves: a list of spans of fp32 values, one per tensor
// (CommOp::bucket: several tensors reduced as one buffer), and how they split over members.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

namespace tandem::exec::cpu {

struct Span {
  float* data = nullptr;
  std::int64_t size = 0;  // floats
};
using FlatBuffer = std::vector<Span>;
std::int64_t flat_size(const FlatBuffer& buffer);

// The run was aborted (another rank failed): not a failure of the op that sees it.
class AbortedError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// [begin, end) of member `index`'s slice of a flat buffer of `size` elements over `members`:
// [i·c, min((i+1)·c, size)) with c = ceil(size / members).
std::pair<std::int64_t, std::int64_t> shard_range(std::int64_t size, int members, int index);

}  // namespace tandem::exec::cpu
