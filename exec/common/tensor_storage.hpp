// The buffer behind a tensor handle in a real backend, or one error that names the op, the tensor
// (and its name, when known) and what is wrong: released too early, or smaller than the handle.
// Both backends keep buffers by tensor id with their element count; only the storage differs.
#pragma once

#include <stdexcept>
#include <string>

#include "strategies/tensor.hpp"

namespace tandem::exec {

// `Buffers`: map tensor id -> buffer with a `numel` member; `Names`: map tensor id -> name.
template <class Buffers, class Names>
auto& checked_buffer(Buffers& buffers, const Names& names, const Tensor& tensor, const std::string& label) {
  auto it = buffers.find(tensor.id);
  if (it == buffers.end()) {
    auto name = names.find(tensor.id);
    throw std::logic_error("op " + label + ": tensor " + std::to_string(tensor.id) +
                           (name != names.end() ? " '" + name->second + "'" : std::string()) +
                           " is not allocated (released too early?)");
  }
  if (it->second.numel < tensor.numel())
    throw std::logic_error("op " + label + ": tensor " + std::to_string(tensor.id) +
                           " is smaller than its handle says");
  return it->second;
}

}  // namespace tandem::exec
