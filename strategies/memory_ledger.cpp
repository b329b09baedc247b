#include "strategies/memory_ledger.hpp"

#include <numeric>
#include <stdexcept>
#include <string>

namespace tandem {

Bytes MemoryUsage::total() const { return std::accumulate(by_category.begin(), by_category.end(), 0.0); }

void MemoryLedger::allocate(int tensor_id, Bytes bytes, MemCategory category) {
  if (!live_.emplace(tensor_id, Entry{bytes, category}).second)
    throw std::logic_error("tensor " + std::to_string(tensor_id) + " allocated twice");
  current_.by_category[static_cast<std::size_t>(category)] += bytes;
  current_total_ += bytes;
  if (current_total_ > peak_) {
    peak_ = current_total_;
    at_peak_ = current_;
  }
}

void MemoryLedger::release(int tensor_id) {
  auto it = live_.find(tensor_id);
  if (it == live_.end())
    throw std::logic_error("tensor " + std::to_string(tensor_id) + " released but not allocated");
  current_.by_category[static_cast<std::size_t>(it->second.category)] -= it->second.bytes;
  current_total_ -= it->second.bytes;
  live_.erase(it);
}

}  // namespace tandem
