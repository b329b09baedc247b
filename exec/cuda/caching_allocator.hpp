// A caching device allocator: cudaMalloc is slow and synchronises the device, so freed blocks are
// kept and reused for later requests of a similar size (as PyTorch's caching allocator does).
// Sizes are rounded up (512 B granules below 1 MiB, 2 MiB granules above) and a free block
// serves a request it fits within 2x (large) so fragments stay bounded.
//
// Stream order: every block's uses are on the compute stream, or on another stream joined to it
// by events, so a block freed on the host may be reused by the next allocation at once (its new
// owner's work is queued behind the old one's). A block still read by an op on another stream
// (an asynchronous send) is freed with that op's event: it is reused only once the event has
// completed.
//
// Reporting: bytes in use (requested, rounded) and their peak, bytes reserved from the device
// and their peak. When cudaMalloc fails the cache is emptied (after synchronising the device) and
// the request retried; a second failure throws OutOfMemory with the numbers.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <map>
#include <mutex>
#include <stdexcept>
#include <unordered_map>
#include <vector>

namespace tandem::exec::cuda {

class OutOfMemory : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class CachingAllocator {
 public:
  CachingAllocator() = default;
  ~CachingAllocator();  // returns every block to the device
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  void* allocate(std::size_t bytes);
  // `ready` (nullable): the block is reused only once this event has completed.
  void free(void* pointer, cudaEvent_t ready = nullptr);
  // Returns cached (free) blocks to the device.
  void empty_cache();

  std::size_t in_use_bytes() const;
  std::size_t peak_in_use_bytes() const;
  std::size_t reserved_bytes() const;
  std::size_t peak_reserved_bytes() const;
  std::size_t device_allocations() const;  // cudaMalloc calls so far
  void reset_peaks();

  static std::size_t rounded_size(std::size_t bytes);

 private:
  void* take_cached(std::size_t size);
  void collect_pending();
  void release_cached_locked();

  mutable std::mutex mutex_;
  std::multimap<std::size_t, void*> free_;             // size -> block
  std::unordered_map<void*, std::size_t> block_size_;  // every block we own
  std::unordered_map<void*, std::size_t> in_use_;
  struct Pending {
    void* pointer;
    cudaEvent_t ready;
  };
  std::vector<Pending> pending_;
  std::size_t in_use_bytes_ = 0, peak_in_use_ = 0, reserved_ = 0, peak_reserved_ = 0, mallocs_ = 0;
};

}  // namespace tandem::exec::cuda
