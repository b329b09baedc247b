// Tensors as the per-rank interface sees them: a handle with a shape and a dtype. A backend
// decides what stands behind the handle (nothing in the simulator, real memory on CPU/GPU).
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "common/units.hpp"

namespace tandem {

// fp8: a compute dtype only (FP8 tensor-core GEMMs, as Transformer Engine runs them: operands cast
// to E4M3 or E5M2 with a per-tensor scale); no tensor is stored in it.
enum class DType : std::uint8_t { fp32, bf16, fp16, int32, fp8 };

Bytes dtype_bytes(DType dtype);
const char* to_string(DType dtype);
DType parse_dtype(const std::string& text);  // throws std::invalid_argument

// What a buffer holds: memory is reported per category, as the ZeRO paper does.
enum class MemCategory : std::uint8_t {
  parameters,
  gradients,
  optimizer_state,
  activations,
  comm_buffers,
  workspace,
  // In the host's memory, not the device's (ZeRO-Offload, ParallelConfig::offload_optimizer):
  // optimizer state (fp32 master, m, v: training state, checkpointed) and the staging buffers a
  // step copies gradients and parameters through. Counted apart from the device's memory.
  host_optimizer_state,
  host_buffers,
};
inline constexpr int kMemCategoryCount = 8;
const char* to_string(MemCategory category);
inline bool in_host_memory(MemCategory category) {
  return category == MemCategory::host_optimizer_state || category == MemCategory::host_buffers;
}

// A tensor's dimensions, held inline: strategies copy tensors into every op they issue (millions
// per simulated iteration at cluster scale), and a heap-allocated vector per copy was a fifth of
// a large simulation's time. Reads like a std::vector and converts to and from one.
class Shape {
 public:
  static constexpr std::size_t kMaxDims = 6;

  Shape() = default;
  Shape(std::initializer_list<std::int64_t> dims) { assign(dims.begin(), dims.end()); }
  Shape(const std::vector<std::int64_t>& dims) { assign(dims.begin(), dims.end()); }  // NOLINT: implicit
  operator std::vector<std::int64_t>() const { return {begin(), end()}; }              // NOLINT: implicit

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const std::int64_t* begin() const { return dims_; }
  const std::int64_t* end() const { return dims_ + size_; }
  std::int64_t* begin() { return dims_; }
  std::int64_t* end() { return dims_ + size_; }
  const std::int64_t* data() const { return dims_; }
  std::int64_t operator[](std::size_t i) const { return dims_[i]; }
  std::int64_t& operator[](std::size_t i) { return dims_[i]; }
  std::int64_t front() const { return dims_[0]; }
  std::int64_t back() const { return dims_[size_ - 1]; }
  void push_back(std::int64_t d);
  friend bool operator==(const Shape& a, const Shape& b) {
    return a.size_ == b.size_ && std::equal(a.begin(), a.end(), b.begin());
  }

 private:
  template <class It>
  void assign(It first, It last) {
    for (; first != last; ++first) push_back(*first);
  }
  std::int64_t dims_[kMaxDims] = {};
  std::uint8_t size_ = 0;
};

struct Tensor {
  std::int32_t id = -1;  // backend-assigned; -1 is "no tensor"
  Shape shape;
  DType dtype = DType::fp32;

  bool valid() const { return id >= 0; }
  std::int64_t numel() const;
  Bytes bytes() const { return static_cast<Bytes>(numel()) * dtype_bytes(dtype); }
};

// Where a rank's tensor sits in a logical (global, unsharded) tensor: a model declares it for
// every parameter (tensor-parallel shards), a strategy for what it derives from parameters
// (ZeRO partitions of parameters and optimizer state). A backend with real memory initialises
// each parameter as its part of the ONE global tensor (so every strategy starts from the same
// weights) and saves checkpoints in global form (so another strategy can restore them).
struct TensorPlacement {
  std::string name;                        // the logical tensor, e.g. "layer0.attn.qkv.weight"
  std::vector<std::int64_t> global_shape;
  int dim = 0;                             // the tensor-parallel dimension
  // Index ranges {begin, length} of dimension `dim` of the global tensor, concatenated in this
  // order, that the rank's (tensor-parallel) part holds; empty: the whole dimension.
  std::vector<std::pair<std::int64_t, std::int64_t>> segments;
  // A second sharded dimension, its ranges as `segments` (an expert weight under expert and
  // tensor parallelism: experts along dimension 0 by the expert-parallel rank, their hidden width
  // by the tensor-parallel one); -1: none.
  int dim2 = -1;
  std::vector<std::pair<std::int64_t, std::int64_t>> segments2;
  // The tensor holds elements [flat_offset, flat_offset + numel) of that part (a ZeRO
  // partition); elements past the part's end are padding.
  std::int64_t flat_offset = 0;

  std::int64_t global_numel() const;
  std::int64_t part_numel() const;  // elements of the tensor-parallel part
  // The global flat index of the tensor's element i, or -1 for padding (past the part's end,
  // or a segment row past the global size, as a vocabulary padded to a multiple of tp).
  std::int64_t global_index(std::int64_t i) const;
};

// A tensor that is its whole logical tensor.
TensorPlacement whole_tensor(std::string name, std::vector<std::int64_t> shape);

}  // namespace tandem
