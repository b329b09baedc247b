// The compute fidelity's names (simulation.hpp), apart from the simulator itself: the scenario
// reader and the command line parse them without loading SimGrid (sim/module/).
#include <stdexcept>
#include <string>

#include "sim/simulation.hpp"

namespace tandem::sim {

const char* to_string(ComputeFidelity fidelity) {
  return fidelity == ComputeFidelity::fused ? "fused" : "per_op";
}

ComputeFidelity parse_compute_fidelity(const std::string& text) {
  if (text == "fused") return ComputeFidelity::fused;
  if (text == "per_op") return ComputeFidelity::per_op;
  throw std::invalid_argument("unknown compute fidelity '" + text + "' (expected fused or per_op)");
}

}  // namespace tandem::sim
