// Collective algorithms' and fidelities' names (collective.hpp), apart from the SimGrid code that
// runs them: the scenario reader and the command line parse them without loading SimGrid.
#include <stdexcept>
#include <string>

#include "sim/collectives/collective.hpp"

namespace tandem::sim {

const char* to_string(CollectiveAlgorithm algorithm) {
  switch (algorithm) {
    case CollectiveAlgorithm::automatic: return "automatic";
    case CollectiveAlgorithm::ring: return "ring";
    case CollectiveAlgorithm::tree: return "tree";
    case CollectiveAlgorithm::hierarchical: return "hierarchical";
    case CollectiveAlgorithm::direct: return "direct";
    case CollectiveAlgorithm::nvls: return "nvls";
  }
  return "?";
}

const char* to_string(CollectiveFidelity fidelity) {
  switch (fidelity) {
    case CollectiveFidelity::automatic: return "automatic";
    case CollectiveFidelity::exact: return "exact";
    case CollectiveFidelity::aggregated: return "aggregated";
  }
  return "?";
}

CollectiveAlgorithm parse_collective_algorithm(const std::string& text) {
  for (auto a : {CollectiveAlgorithm::automatic, CollectiveAlgorithm::ring, CollectiveAlgorithm::tree,
                 CollectiveAlgorithm::hierarchical, CollectiveAlgorithm::direct, CollectiveAlgorithm::nvls})
    if (text == to_string(a)) return a;
  if (text == "auto") return CollectiveAlgorithm::automatic;
  throw std::invalid_argument("unknown collective algorithm '" + text +
                              "' (expected automatic, ring, tree, hierarchical, direct or nvls)");
}

CollectiveFidelity parse_collective_fidelity(const std::string& text) {
  for (auto f : {CollectiveFidelity::automatic, CollectiveFidelity::exact, CollectiveFidelity::aggregated})
    if (text == to_string(f)) return f;
  if (text == "auto") return CollectiveFidelity::automatic;
  throw std::invalid_argument("unknown collective fidelity '" + text + "' (expected automatic, exact or aggregated)");
}

}  // namespace tandem::sim
