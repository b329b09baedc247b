// A kernel's class: the finer-than-OpKind name under which a calibrated profile keeps an
// efficiency curve. On a CPU a GELU costs a hundred times an add over the same bytes (it
// evaluates tanh per element), and a loss forward (exp and log per logit) many times its
// backward, so one curve per OpKind cannot describe them; one per class can.
//
//   gemm, optimizer, memcpy                 one class each
//   attention.fwd / attention.bwd, norm.fwd / norm.bwd, embedding.fwd / embedding.bwd,
//   loss.fwd / loss.bwd                     forward and backward kernels
//   loss.shard_max / loss.shard_sum_exp /   the vocab-parallel forward's three steps (LossStep):
//   loss.shard_finish                       a row maximum costs far less per byte than the
//                                           exponentials of a whole cross-entropy
//   elementwise.<fn>[.bwd]                  per function: gelu, swiglu, add, dropout, bias_add,
//                                           scale, cast
//
// A profile's curve is looked up by the op's class, then by its kind's name ("elementwise").
#pragma once

#include <string>

#include "strategies/op.hpp"

namespace tandem {

std::string kernel_class(const ComputeOp& op);
const char* to_string(ElementwiseFn fn);

// The OpKind a class name starts with ("elementwise.gelu" -> elementwise); false when it names
// no compute kind.
bool kernel_class_kind(const std::string& kernel_class, OpKind& kind);

}  // namespace tandem
