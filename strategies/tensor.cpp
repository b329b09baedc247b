#include "strategies/tensor.hpp"

#include <algorithm>
#include <array>
#include <stdexcept>

#include "common/checked_math.hpp"

namespace tandem {

Bytes dtype_bytes(DType dtype) {
  switch (dtype) {
    case DType::fp32: return 4;
    case DType::bf16: return 2;
    case DType::fp16: return 2;
    case DType::int32: return 4;
    case DType::fp8: return 1;
  }
  return 4;
}

const char* to_string(DType dtype) {
  switch (dtype) {
    case DType::fp32: return "fp32";
    case DType::bf16: return "bf16";
    case DType::fp16: return "fp16";
    case DType::int32: return "int32";
    case DType::fp8: return "fp8";
  }
  return "?";
}

DType parse_dtype(const std::string& text) {
  if (text == "fp32" || text == "float32") return DType::fp32;
  if (text == "bf16" || text == "bfloat16") return DType::bf16;
  if (text == "fp16" || text == "float16") return DType::fp16;
  if (text == "int32") return DType::int32;
  throw std::invalid_argument("unknown dtype '" + text + "' (expected fp32, bf16 or fp16)");
}

const char* to_string(MemCategory category) {
  switch (category) {
    case MemCategory::parameters: return "parameters";
    case MemCategory::gradients: return "gradients";
    case MemCategory::optimizer_state: return "optimizer_state";
    case MemCategory::activations: return "activations";
    case MemCategory::comm_buffers: return "comm_buffers";
    case MemCategory::workspace: return "workspace";
    case MemCategory::host_optimizer_state: return "host_optimizer_state";
    case MemCategory::host_buffers: return "host_buffers";
  }
  return "?";
}

void Shape::push_back(std::int64_t d) {
  if (size_ == kMaxDims)
    throw std::logic_error("a tensor of more than " + std::to_string(kMaxDims) + " dimensions");
  dims_[size_++] = d;
}

std::int64_t Tensor::numel() const {
  std::int64_t n = 1;
  for (auto d : shape) n = checked_mul(n, d, "a tensor's element count");
  return n;
}

}  // namespace tandem

namespace tandem {

namespace {
using Segments = std::vector<std::pair<std::int64_t, std::int64_t>>;
constexpr std::size_t kMaxDims = 8;

// A placement's part: the global shape with each sharded dimension's segments summed. On the
// stack: global_index asks for it once per element (1.6e9 times for GPT-2 1.5B with its masters).
struct PartShape {
  std::array<std::int64_t, kMaxDims> dims{};
  std::size_t rank = 0;
  std::int64_t numel() const {
    std::int64_t n = 1;
    for (std::size_t k = 0; k < rank; ++k) n *= dims[k];
    return n;
  }
};

PartShape part_shape(const TensorPlacement& p) {
  PartShape shape;
  shape.rank = p.global_shape.size();
  if (shape.rank > kMaxDims) throw std::logic_error("tensor '" + p.name + "': more than 8 dimensions");
  std::copy(p.global_shape.begin(), p.global_shape.end(), shape.dims.begin());
  for (const auto& [dim, segments] : {std::pair<int, const Segments&>{p.dim, p.segments}, {p.dim2, p.segments2}}) {
    if (segments.empty() || dim < 0) continue;
    if (static_cast<std::size_t>(dim) >= shape.rank)
      throw std::logic_error("tensor '" + p.name + "': sharded along dimension " + std::to_string(dim) + " of " +
                             std::to_string(shape.rank));
    std::int64_t n = 0;
    for (const auto& [begin, length] : segments) n += length;
    shape.dims[static_cast<std::size_t>(dim)] = n;
  }
  return shape;
}

// A coordinate of the part along a sharded dimension, in the global tensor (past its size: -1).
std::int64_t global_coordinate(std::int64_t c, const Segments& segments, std::int64_t global_size) {
  for (const auto& [begin, length] : segments) {
    if (c < length) {
      c += begin;
      break;
    }
    c -= length;
  }
  return c < global_size ? c : -1;
}
std::int64_t product(const std::vector<std::int64_t>& shape) {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}
}  // namespace

std::int64_t TensorPlacement::global_numel() const { return product(global_shape); }
std::int64_t TensorPlacement::part_numel() const { return part_shape(*this).numel(); }

std::int64_t TensorPlacement::global_index(std::int64_t i) const {
  const PartShape shape = part_shape(*this);
  std::int64_t j = flat_offset + i;
  if (j < 0 || j >= shape.numel()) return -1;
  // Unravel in the part's shape, map the sharded coordinate, ravel in the global shape.
  std::array<std::int64_t, kMaxDims> coord{};
  for (std::size_t k = shape.rank; k-- > 0;) {
    coord[k] = j % shape.dims[k];
    j /= shape.dims[k];
  }
  for (const auto& [d, parts] : {std::pair<int, const Segments&>{dim, segments}, {dim2, segments2}}) {
    if (parts.empty() || d < 0) continue;
    const auto k = static_cast<std::size_t>(d);
    coord[k] = global_coordinate(coord[k], parts, global_shape[k]);
    if (coord[k] < 0) return -1;
  }
  std::int64_t g = 0;
  for (std::size_t k = 0; k < shape.rank; ++k) g = g * global_shape[k] + coord[k];
  return g;
}

TensorPlacement whole_tensor(std::string name, std::vector<std::int64_t> shape) {
  TensorPlacement p;
  p.name = std::move(name);
  p.global_shape = std::move(shape);
  return p;
}

}  // namespace tandem
