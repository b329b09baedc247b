// The training state of a run in global form: every logical tensor (parameters, fp32 masters,
// AdamW moments) whole, assembled from the ranks' parts by their TensorPlacements
// (strategies/tensor.hpp). It is what checkpoints hold, so that a run saved under one strategy
// (data, tensor, pipeline parallel, ZeRO) restores under another, and what equivalence tests
// compare across strategies.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "strategies/tensor.hpp"

namespace tandem::exec::cpu {

// A rank's tensor and where it sits in its logical tensor.
struct PlacedTensor {
  TensorPlacement placement;
  std::vector<float> values;
};

// Logical tensors by name from every rank's placed tensors. Replicas (data parallel, the tied
// embedding's copy) write the same elements; they must agree bit for bit. Every element of
// every logical tensor must come from some rank. Throws std::logic_error otherwise (a
// placement bug, not bad input).
std::map<std::string, std::vector<float>> assemble_global(
    const std::vector<std::vector<PlacedTensor>>& ranks);

}  // namespace tandem::exec::cpu
