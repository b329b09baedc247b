#include "exec/cuda/caching_allocator.hpp"

#include <algorithm>
#include <string>

#include "kernels/cuda/check.hpp"

namespace tandem::exec::cuda {
namespace {

constexpr std::size_t kSmallGranule = 512;
constexpr std::size_t kLargeGranule = 2u << 20;
constexpr std::size_t kLargeThreshold = 1u << 20;

std::string mib(std::size_t bytes) { return std::to_string(bytes / (1024 * 1024)) + " MiB"; }

}  // namespace

std::size_t CachingAllocator::rounded_size(std::size_t bytes) {
  const std::size_t b = std::max<std::size_t>(bytes, 1);
  const std::size_t g = b < kLargeThreshold ? kSmallGranule : kLargeGranule;
  return (b + g - 1) / g * g;
}

CachingAllocator::~CachingAllocator() {
  // Best effort at teardown: no throwing from a destructor.
  cudaDeviceSynchronize();
  for (const Pending& p : pending_) cudaEventDestroy(p.ready);
  for (const auto& [pointer, size] : block_size_) cudaFree(pointer);
}

void CachingAllocator::collect_pending() {
  auto done = [](const Pending& p) { return cudaEventQuery(p.ready) == cudaSuccess; };
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (done(*it)) {
      cudaEventDestroy(it->ready);
      free_.emplace(block_size_.at(it->pointer), it->pointer);
      it = pending_.erase(it);
    } else {
      ++it;
    }
  }
}

void* CachingAllocator::take_cached(std::size_t size) {
  auto it = free_.lower_bound(size);
  // A large block serves requests down to half its size; a small one only its own size class.
  const std::size_t limit = size < kLargeThreshold ? size : 2 * size;
  if (it == free_.end() || it->first > limit) return nullptr;
  void* p = it->second;
  free_.erase(it);
  return p;
}

void CachingAllocator::release_cached_locked() {
  for (auto& [size, pointer] : free_) {
    CUDA_CHECK(cudaFree(pointer));
    block_size_.erase(pointer);
    reserved_ -= size;
  }
  free_.clear();
}

void* CachingAllocator::allocate(std::size_t bytes) {
  const std::size_t size = rounded_size(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  if (!pending_.empty()) collect_pending();
  void* p = take_cached(size);
  if (!p) {
    if (cudaMalloc(&p, size) != cudaSuccess) {
      cudaGetLastError();  // clear the sticky-free error state of the failed call
      CUDA_CHECK(cudaDeviceSynchronize());
      collect_pending();
      release_cached_locked();
      if (cudaMalloc(&p, size) != cudaSuccess) {
        cudaGetLastError();
        std::size_t free_bytes = 0, total_bytes = 0;
        cudaMemGetInfo(&free_bytes, &total_bytes);
        throw OutOfMemory("CUDA out of memory: " + mib(size) + " requested, " + mib(in_use_bytes_) + " in use, " +
                          mib(free_bytes) + " free of " + mib(total_bytes));
      }
    }
    ++mallocs_;
    block_size_[p] = size;
    reserved_ += size;
    peak_reserved_ = std::max(peak_reserved_, reserved_);
  }
  const std::size_t block = block_size_.at(p);
  in_use_[p] = block;
  in_use_bytes_ += block;
  peak_in_use_ = std::max(peak_in_use_, in_use_bytes_);
  return p;
}

void CachingAllocator::free(void* pointer, cudaEvent_t ready) {
  if (!pointer) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = in_use_.find(pointer);
  if (it == in_use_.end()) throw std::logic_error("CachingAllocator::free of a pointer it did not allocate");
  in_use_bytes_ -= it->second;
  const std::size_t size = it->second;
  in_use_.erase(it);
  if (ready) pending_.push_back({pointer, ready});
  else free_.emplace(size, pointer);
}

void CachingAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mutex_);
  collect_pending();
  release_cached_locked();
}

std::size_t CachingAllocator::in_use_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return in_use_bytes_;
}
std::size_t CachingAllocator::peak_in_use_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return peak_in_use_;
}
std::size_t CachingAllocator::reserved_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return reserved_;
}
std::size_t CachingAllocator::peak_reserved_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return peak_reserved_;
}
std::size_t CachingAllocator::device_allocations() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return mallocs_;
}
void CachingAllocator::reset_peaks() {
  std::lock_guard<std::mutex> lock(mutex_);
  peak_in_use_ = in_use_bytes_;
  peak_reserved_ = reserved_;
}

}  // namespace tandem::exec::cuda
