// Bookkeeping of a rank's allocations by category: current and peak bytes, and the breakdown at
// the peak. Every backend keeps one per rank, so peak memory and out-of-memory verdicts mean the
// same thing whether predicted or measured.
#pragma once

#include <array>
#include <unordered_map>

#include "common/units.hpp"
#include "strategies/tensor.hpp"

namespace tandem {

struct MemoryUsage {
  std::array<Bytes, kMemCategoryCount> by_category{};
  Bytes total() const;
};

class MemoryLedger {
 public:
  void allocate(int tensor_id, Bytes bytes, MemCategory category);
  void release(int tensor_id);  // unknown ids are a strategy bug: std::logic_error

  const MemoryUsage& current() const { return current_; }
  const MemoryUsage& at_peak() const { return at_peak_; }
  Bytes peak() const { return peak_; }

 private:
  struct Entry {
    Bytes bytes;
    MemCategory category;
  };
  std::unordered_map<int, Entry> live_;
  MemoryUsage current_;
  MemoryUsage at_peak_;
  Bytes current_total_ = 0;
  Bytes peak_ = 0;
};

}  // namespace tandem
