// What the real backends (exec/cpu, exec/cuda) read from op labels and tensor names: the
// micro-batch a label belongs to, the data tensors of the data contract (exec/cpu/data.hpp),
// the ops that draw dropout masks and the model's loss-mean op. One definition for both backends,
// so they agree on which tensors get data and which scalar is the loss.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "strategies/op.hpp"

namespace tandem::exec {

bool ends_with(std::string_view s, std::string_view suffix);
// "mb{k}.rest" -> k and the position of "rest"; false when the label has no such prefix.
bool parse_micro_batch(std::string_view label, std::int64_t& k, std::size_t& rest);
// A data tensor's name: "mb{k}.{role}" with a role without dots.
bool parse_data_name(std::string_view name, std::int64_t& k, std::string_view& role);
// Attention and dropout ops draw masks keyed on their label.
bool draws_dropout(const ComputeOp& op);
// The loss mean: an element-wise scale whose output is smaller than its input.
bool is_loss_mean(const ComputeOp& op);
// The label with its micro-batch index k replaced by k + offset ("mb1.x" -> "mb5.x"): dropout
// keys use the global micro-batch. Labels without the prefix are returned unchanged.
std::string with_global_micro_batch(const std::string& label, std::int64_t offset);

}  // namespace tandem::exec
