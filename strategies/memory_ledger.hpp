// Bookkeeping of a rank's allocations by category: current and peak bytes, and the breakdown at
// the peak. Every backend keeps one per rank, so peak memory and out-of-memory verdicts mean the
// same thing whether predicted or measured.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "common/units.hpp"
#include "strategies/tensor.hpp"

namespace tandem {

struct MemoryUsage {
  std::array<Bytes, kMemCategoryCount> by_category{};
  Bytes total() const;
};

// The live tensors are few (thousands) while a long simulation allocates millions: they sit in an
// open-addressing table (linear probing, backward-shift deletion) that allocates only when the
// live set outgrows it. A node-based hash map's allocation per tensor, or a table indexed by the
// ever-growing id, each cost 6-8% of a large simulation's time.
class MemoryLedger {
 public:
  void allocate(int tensor_id, Bytes bytes, MemCategory category);
  void release(int tensor_id);  // unknown ids are a strategy bug: std::logic_error
  // Whether `tensor_id` holds memory now, and in which category (std::logic_error if it does not).
  bool holds(int tensor_id) const { return slots_[slot_of(tensor_id)].tensor_id == tensor_id; }
  MemCategory category_of(int tensor_id) const;

  // The device's memory: every category but the host's (in_host_memory).
  const MemoryUsage& current() const { return current_; }
  const MemoryUsage& at_peak() const { return at_peak_; }
  Bytes peak() const { return peak_; }
  // The host memory this rank holds (offloaded state and staging buffers): now and at its peak.
  Bytes host_current() const { return host_current_; }
  Bytes host_peak() const { return host_peak_; }

 private:
  struct Entry {
    int tensor_id = kEmpty;
    MemCategory category{};
    Bytes bytes = 0;
  };
  static constexpr int kEmpty = -1;
  std::size_t home_of(int tensor_id) const;  // where its probe starts
  std::size_t slot_of(int tensor_id) const;  // its slot, or the empty slot where it would go
  void grow();

  std::vector<Entry> slots_ = std::vector<Entry>(64);  // a power of two
  std::size_t live_ = 0;
  MemoryUsage current_;
  MemoryUsage at_peak_;
  Bytes current_total_ = 0;
  Bytes peak_ = 0;
  Bytes host_current_ = 0;
  Bytes host_peak_ = 0;
};

}  // namespace tandem
