#include "platforms/kernel_class.hpp"

#include <type_traits>

namespace tandem {

const char* to_string(ElementwiseFn fn) {
  switch (fn) {
    case ElementwiseFn::gelu: return "gelu";
    case ElementwiseFn::swiglu: return "swiglu";
    case ElementwiseFn::add: return "add";
    case ElementwiseFn::dropout: return "dropout";
    case ElementwiseFn::bias_add: return "bias_add";
    case ElementwiseFn::scale: return "scale";
    case ElementwiseFn::cast: return "cast";
    case ElementwiseFn::outer_nesterov: return "outer_nesterov";
  }
  return "?";
}

std::string kernel_class(const ComputeOp& op) {
  const std::string kind = to_string(op.kind);
  return std::visit(
      [&](const auto& args) -> std::string {
        using Args = std::decay_t<decltype(args)>;
        if constexpr (std::is_same_v<Args, ElementwiseArgs>) {
          return kind + "." + to_string(args.fn) + (args.backward ? ".bwd" : "");
        } else if constexpr (std::is_same_v<Args, MoeArgs>) {
          return kind + "." + to_string(args.step) + (args.backward ? ".bwd" : "");
        } else if constexpr (std::is_same_v<Args, LossArgs>) {
          if (args.backward) return kind + ".bwd";
          return kind + (args.step == LossStep::shard_max       ? ".shard_max"
                         : args.step == LossStep::shard_sum_exp ? ".shard_sum_exp"
                         : args.step == LossStep::shard_finish  ? ".shard_finish"
                                                                : ".fwd");
        } else if constexpr (std::is_same_v<Args, AttentionArgs> || std::is_same_v<Args, NormArgs> ||
                             std::is_same_v<Args, EmbeddingArgs>) {
          return kind + (args.backward ? ".bwd" : ".fwd");
        } else {
          return kind;
        }
      },
      op.args);
}

bool kernel_class_kind(const std::string& kernel_class, OpKind& kind) {
  const std::string head = kernel_class.substr(0, kernel_class.find('.'));
  for (int k = 0; k < kOpKindCount; ++k) {
    const auto candidate = static_cast<OpKind>(k);
    if (!is_communication(candidate) && head == to_string(candidate)) {
      kind = candidate;
      return true;
    }
  }
  return false;
}

}  // namespace tandem
