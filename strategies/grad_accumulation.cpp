// The names of GradAccumulation (strategies/model.hpp), as scenarios spell them.
#include <stdexcept>

#include "strategies/model.hpp"

namespace tandem {

const char* to_string(GradAccumulation mode) {
  switch (mode) {
    case GradAccumulation::fused: return "fused";
    case GradAccumulation::add: return "add";
    case GradAccumulation::cast_add: return "cast_add";
  }
  return "?";
}

GradAccumulation parse_grad_accumulation(const std::string& text) {
  if (text == "fused") return GradAccumulation::fused;
  if (text == "add") return GradAccumulation::add;
  if (text == "cast_add") return GradAccumulation::cast_add;
  throw std::invalid_argument("unknown gradient accumulation '" + text + "' (expected fused, add or cast_add)");
}

}  // namespace tandem
