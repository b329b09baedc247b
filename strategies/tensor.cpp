#include "strategies/tensor.hpp"

#include <stdexcept>

namespace tandem {

Bytes dtype_bytes(DType dtype) {
  switch (dtype) {
    case DType::fp32: return 4;
    case DType::bf16: return 2;
    case DType::fp16: return 2;
    case DType::int32: return 4;
  }
  return 4;
}

const char* to_string(DType dtype) {
  switch (dtype) {
    case DType::fp32: return "fp32";
    case DType::bf16: return "bf16";
    case DType::fp16: return "fp16";
    case DType::int32: return "int32";
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
  }
  return "?";
}

std::int64_t Tensor::numel() const {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

}  // namespace tandem
