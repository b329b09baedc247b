#include "strategies/memory_ledger.hpp"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

namespace tandem {

Bytes MemoryUsage::total() const { return std::accumulate(by_category.begin(), by_category.end(), 0.0); }

std::size_t MemoryLedger::home_of(int tensor_id) const {
  // Fibonacci hashing spreads consecutive ids over the table.
  return (static_cast<std::uint64_t>(tensor_id) * 0x9E3779B97F4A7C15ull) >> 20 & (slots_.size() - 1);
}

std::size_t MemoryLedger::slot_of(int tensor_id) const {
  const std::size_t mask = slots_.size() - 1;
  std::size_t i = home_of(tensor_id);
  while (slots_[i].tensor_id != kEmpty && slots_[i].tensor_id != tensor_id) i = (i + 1) & mask;
  return i;
}

void MemoryLedger::grow() {
  std::vector<Entry> old(slots_.size() * 2);
  old.swap(slots_);
  for (const Entry& e : old)
    if (e.tensor_id != kEmpty) slots_[slot_of(e.tensor_id)] = e;
}

void MemoryLedger::allocate(int tensor_id, Bytes bytes, MemCategory category) {
  if (tensor_id < 0) throw std::logic_error("tensor id " + std::to_string(tensor_id) + " is negative");
  if (2 * (live_ + 1) > slots_.size()) grow();  // at most half full: short probes
  Entry& entry = slots_[slot_of(tensor_id)];
  if (entry.tensor_id == tensor_id) throw std::logic_error("tensor " + std::to_string(tensor_id) + " allocated twice");
  entry = Entry{tensor_id, category, bytes};
  ++live_;
  if (in_host_memory(category)) {
    host_current_ += bytes;
    host_peak_ = std::max(host_peak_, host_current_);
    return;
  }
  current_.by_category[static_cast<std::size_t>(category)] += bytes;
  current_total_ += bytes;
  if (current_total_ > peak_) {
    peak_ = current_total_;
    at_peak_ = current_;
  }
}

MemCategory MemoryLedger::category_of(int tensor_id) const {
  const Entry& entry = slots_[slot_of(tensor_id)];
  if (entry.tensor_id != tensor_id) throw std::logic_error("tensor " + std::to_string(tensor_id) + " is not allocated");
  return entry.category;
}

void MemoryLedger::release(int tensor_id) {
  std::size_t hole = tensor_id < 0 ? 0 : slot_of(tensor_id);
  if (tensor_id < 0 || slots_[hole].tensor_id != tensor_id)
    throw std::logic_error("tensor " + std::to_string(tensor_id) + " released but not allocated");
  const Entry entry = slots_[hole];
  if (in_host_memory(entry.category)) {
    host_current_ -= entry.bytes;
  } else {
    current_.by_category[static_cast<std::size_t>(entry.category)] -= entry.bytes;
    current_total_ -= entry.bytes;
  }
  --live_;
  // Backward-shift deletion: pull later entries of the probe run into the hole, so that every
  // entry stays reachable from its home slot without tombstones.
  const std::size_t mask = slots_.size() - 1;
  slots_[hole].tensor_id = kEmpty;
  for (std::size_t i = (hole + 1) & mask; slots_[i].tensor_id != kEmpty; i = (i + 1) & mask) {
    const std::size_t home = home_of(slots_[i].tensor_id);
    // Movable when its home is not in (hole, i] (cyclically).
    const bool home_after_hole = hole <= i ? (home > hole && home <= i) : (home > hole || home <= i);
    if (home_after_hole) continue;
    slots_[hole] = slots_[i];
    slots_[i].tensor_id = kEmpty;
    hole = i;
  }
}

}  // namespace tandem
