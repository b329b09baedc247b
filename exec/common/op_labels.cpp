#include "exec/common/op_labels.hpp"

#include <variant>

namespace tandem::exec {

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

bool parse_micro_batch(std::string_view label, std::int64_t& k, std::size_t& rest) {
  if (label.size() < 4 || label.substr(0, 2) != "mb") return false;
  std::size_t i = 2;
  std::int64_t value = 0;
  while (i < label.size() && label[i] >= '0' && label[i] <= '9') {
    value = value * 10 + (label[i] - '0');
    ++i;
  }
  if (i == 2 || i >= label.size() || label[i] != '.') return false;
  k = value;
  rest = i + 1;
  return true;
}

bool parse_data_name(std::string_view name, std::int64_t& k, std::string_view& role) {
  std::size_t rest = 0;
  if (!parse_micro_batch(name, k, rest)) return false;
  role = name.substr(rest);
  return !role.empty() && role.find('.') == std::string_view::npos;
}

bool draws_dropout(const ComputeOp& op) {
  if (op.kind == OpKind::attention) return true;
  const auto* a = std::get_if<ElementwiseArgs>(&op.args);
  return a != nullptr && a->fn == ElementwiseFn::dropout;
}

bool is_loss_mean(const ComputeOp& op) {
  const auto* a = std::get_if<ElementwiseArgs>(&op.args);
  return op.kind == OpKind::elementwise && a != nullptr && a->fn == ElementwiseFn::scale && !a->backward &&
         op.inputs.size() == 1 && op.outputs.size() == 1 && op.outputs[0].numel() < op.inputs[0].numel();
}

std::string with_global_micro_batch(const std::string& label, std::int64_t offset) {
  std::int64_t k = 0;
  std::size_t rest = 0;
  if (offset == 0 || !parse_micro_batch(label, k, rest)) return label;
  return "mb" + std::to_string(k + offset) + "." + label.substr(rest);
}

}  // namespace tandem::exec
