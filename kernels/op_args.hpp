// What the CPU and CUDA dispatchers (kernels/cpu/dispatch.cpp, kernels/cuda/dispatch.cpp) read
// from a compute op the same way: its tensors, checked against the sizes its arguments imply,
// the op kind its arguments are for, and the slot layouts both follow (kernels/cpu/dispatch.hpp):
// one reading, so that the two backends cannot drift apart.
// Backend-neutral and header-only; kept to C++17 so that any kernels/cuda file may include it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "strategies/op.hpp"

namespace tandem::kernels {

// Checked access to one op's tensors: every failure throws std::logic_error naming the backend,
// the op's label and kind, and the tensor's slot.
class OpTensors {
 public:
  using Data = std::function<float*(const Tensor&)>;

  OpTensors(const char* backend, const ComputeOp& op, const Data& data)
      : backend_(backend), op_(op), data_(data) {}

  [[noreturn]] void fail(const std::string& why) const {
    throw std::logic_error(std::string(backend_) + " kernels: op '" + op_.label + "' (" +
                           to_string(op_.kind) + "): " + why);
  }

  const ComputeOp& op() const { return op_; }
  std::size_t inputs() const { return op_.inputs.size(); }
  std::size_t outputs() const { return op_.outputs.size(); }
  const Tensor& input_tensor(std::size_t i) const { return tensor(op_.inputs, i, "input"); }
  const Tensor& output_tensor(std::size_t i) const { return tensor(op_.outputs, i, "output"); }

  // Storage of a tensor holding at least min_numel elements.
  float* in(std::size_t i, std::int64_t min_numel) const {
    return storage(input_tensor(i), min_numel, "input", i);
  }
  float* out(std::size_t i, std::int64_t min_numel) const {
    return storage(output_tensor(i), min_numel, "output", i);
  }
  // A 1-byte-per-element mask in fp32 storage: needs numel()·4 >= count bytes.
  std::uint8_t* in_mask(std::size_t i, std::int64_t count) const {
    return mask(input_tensor(i), count, "input", i);
  }
  std::uint8_t* out_mask(std::size_t i, std::int64_t count) const {
    return mask(output_tensor(i), count, "output", i);
  }

 private:
  const Tensor& tensor(const std::vector<Tensor>& list, std::size_t i, const char* role) const {
    if (i >= list.size())
      fail("expects " + std::string(role) + " " + std::to_string(i) + ", the op has " +
           std::to_string(list.size()));
    if (!list[i].valid()) fail(std::string(role) + " " + std::to_string(i) + " is not a tensor");
    return list[i];
  }
  float* fetch(const Tensor& t) const {
    float* p = data_(t);
    if (!p) fail("no storage for tensor " + std::to_string(t.id));
    return p;
  }
  float* storage(const Tensor& t, std::int64_t min_numel, const char* role, std::size_t i) const {
    if (t.numel() < min_numel)
      fail(std::string(role) + " " + std::to_string(i) + " has " + std::to_string(t.numel()) +
           " elements, the op needs " + std::to_string(min_numel));
    return fetch(t);
  }
  std::uint8_t* mask(const Tensor& t, std::int64_t count, const char* role, std::size_t i) const {
    if (t.numel() * 4 < count)
      fail(std::string(role) + " " + std::to_string(i) + " (mask) holds " +
           std::to_string(t.numel() * 4) + " bytes, the op needs " + std::to_string(count));
    return reinterpret_cast<std::uint8_t*>(fetch(t));
  }

  const char* backend_;
  const ComputeOp& op_;
  const Data& data_;
};

// The op kind a KernelArgs alternative is for.
template <typename T>
constexpr OpKind kind_of_args() {
  if constexpr (std::is_same_v<T, GemmArgs>) return OpKind::gemm;
  else if constexpr (std::is_same_v<T, AttentionArgs>) return OpKind::attention;
  else if constexpr (std::is_same_v<T, NormArgs>) return OpKind::norm;
  else if constexpr (std::is_same_v<T, ElementwiseArgs>) return OpKind::elementwise;
  else if constexpr (std::is_same_v<T, EmbeddingArgs>) return OpKind::embedding;
  else if constexpr (std::is_same_v<T, LossArgs>) return OpKind::loss;
  else if constexpr (std::is_same_v<T, OptimizerArgs>) return OpKind::optimizer;
  else if constexpr (std::is_same_v<T, CodecArgs>) return OpKind::elementwise;  // memory-bound codecs
  else if constexpr (std::is_same_v<T, MoeArgs>) return OpKind::elementwise;    // gathers and scatters
  else return OpKind::memcpy;
}

// Throws (through `tensors`) unless the op's arguments are for the op's kind.
inline void check_args_kind(const OpTensors& tensors) {
  const OpKind kind = std::visit(
      [](const auto& a) { return kind_of_args<std::decay_t<decltype(a)>>(); }, tensors.op().args);
  if (kind != tensors.op().kind)
    tensors.fail(std::string("arguments are for a ") + to_string(kind) + " op");
}

// A block table of a codec op (strategies/compression/codec_args.hpp): int32 words held in the
// fp32 storage of input or output i, at least `count` of them.
inline std::uint32_t* table_words(const OpTensors& c, bool output, std::size_t i, std::int64_t count) {
  float* p = output ? c.out(i, count) : c.in(i, count);
  return reinterpret_cast<std::uint32_t*>(p);
}

// A codec op's inputs (or outputs) as one concatenation of `n` elements, walked in order:
// visit(tensor index, offset in the concatenation, length) for each tensor, after checking that
// it fits; in the end they must add up to exactly n (pack, unpack, the decodes).
template <class Visit>
void for_each_concatenated(const OpTensors& c, bool outputs, std::int64_t n, Visit&& visit) {
  const std::string side = outputs ? "outputs" : "inputs";
  std::int64_t at = 0;
  for (std::size_t i = 0; i < (outputs ? c.outputs() : c.inputs()); ++i) {
    const std::int64_t len = (outputs ? c.output_tensor(i) : c.input_tensor(i)).numel();
    if (at + len > n) c.fail("the " + side + " hold more elements than the op's numel " + std::to_string(n));
    visit(i, at, len);
    at += len;
  }
  if (at != n)
    c.fail("the " + side + " hold " + std::to_string(at) + " elements, the op's numel is " + std::to_string(n));
}

// The last '.'-component of a label ("layer0.grad.zero" -> "zero").
inline std::string_view last_component(std::string_view label) {
  const auto dot = label.rfind('.');
  return dot == std::string_view::npos ? label : label.substr(dot + 1);
}

// The outputs of an attention forward after the context (outputs[0]): flash {logsumexp};
// unfused {probs[, mask, dropped]}. `dropout`: whether attention dropout applies (always for
// flash, whose backward regenerates the mask; unfused only when the mask is kept).
struct AttentionForwardOutputs {
  float* lse = nullptr;
  float* probs = nullptr;
  std::uint8_t* mask = nullptr;
  float* dropped = nullptr;
  bool dropout = false;
};
inline AttentionForwardOutputs attention_forward_outputs(const OpTensors& c, bool flash,
                                                         std::int64_t rows, std::int64_t scores) {
  AttentionForwardOutputs o;
  if (flash) {
    if (c.outputs() > 2) c.fail("a flash attention forward has outputs {context, logsumexp}");
    if (c.outputs() > 1) o.lse = c.out(1, rows);
    o.dropout = true;
    return o;
  }
  if (c.outputs() != 1 && c.outputs() != 2 && c.outputs() != 4)
    c.fail("an unfused attention forward has outputs {context, probs[, mask, dropped]}");
  if (c.outputs() > 1) o.probs = c.out(1, scores);
  if (c.outputs() == 4) {
    o.mask = c.out_mask(2, scores);
    o.dropped = c.out(3, scores);
    o.dropout = true;
  }
  return o;
}

// The saved inputs of an attention backward, whose inputs are {qkv, [context], saved…,
// d_context}: the context leads the saved ones when their count says so. Flash saves the
// logsumexp (and always drops out); unfused saves probs[, mask, dropped] (dropout with a mask).
struct AttentionSavedInputs {
  const float* lse = nullptr;
  const float* probs = nullptr;
  const std::uint8_t* mask = nullptr;
  bool dropout = false;
};
// With context parallelism (`leading` 2) the gathered K/V follows qkv: {qkv, kv, [context], …}.
inline AttentionSavedInputs attention_saved_inputs(const OpTensors& c, bool flash,
                                                   std::int64_t rows, std::int64_t scores,
                                                   std::size_t leading = 1) {
  if (c.inputs() < leading + 2) c.fail("an attention backward has inputs {qkv, [kv], [context], saved…, d_context}");
  std::size_t first = leading, count = c.inputs() - leading - 1;
  if (count == 2 || count == 4) {  // the context output leads the saved tensors
    ++first;
    --count;
  }
  AttentionSavedInputs saved;
  if (flash) {
    if (count != 1) c.fail("a flash attention backward saves exactly the logsumexp");
    saved.lse = c.in(first, rows);
    saved.dropout = true;
    return saved;
  }
  if (count != 1 && count != 3) c.fail("an unfused attention backward saves {probs[, mask, dropped]}");
  saved.probs = c.in(first, scores);
  if (count == 3) {
    saved.mask = c.in_mask(first + 1, scores);
    saved.dropout = true;
  }
  return saved;
}

}  // namespace tandem::kernels
