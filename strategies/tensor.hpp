// Tensors as the per-rank interface sees them: a handle with a shape and a dtype. A backend
// decides what stands behind the handle (nothing in the simulator, real memory on CPU/GPU).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/units.hpp"

namespace tandem {

enum class DType : std::uint8_t { fp32, bf16, fp16, int32 };

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
};
inline constexpr int kMemCategoryCount = 6;
const char* to_string(MemCategory category);

struct Tensor {
  std::int32_t id = -1;  // backend-assigned; -1 is "no tensor"
  std::vector<std::int64_t> shape;
  DType dtype = DType::fp32;

  bool valid() const { return id >= 0; }
  std::int64_t numel() const;
  Bytes bytes() const { return static_cast<Bytes>(numel()) * dtype_bytes(dtype); }
};

}  // namespace tandem
