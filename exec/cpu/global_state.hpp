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
// placement bug, not bad input). `first_wins`: replicas may disagree and the first rank listed
// that holds an element gives it (asynchronous servers' workers each hold their own version of
// the parameters; the servers hold the model).
std::map<std::string, std::vector<float>> assemble_global(
    const std::vector<std::vector<PlacedTensor>>& ranks, bool first_wins = false);

// Restoring a tensor placed at `p` from the global state: the logical tensor's values, checked
// (std::runtime_error when the state lacks it or holds it at another size), and the tensor's part of
// them written to `out` (`numel` values, padding 0). Both backends restore through these.
const std::vector<float>& restorable_values(const std::map<std::string, std::vector<float>>& global,
                                            const TensorPlacement& p);
void extract_part(const std::vector<float>& values, const TensorPlacement& p, float* out, std::int64_t numel);

// The same across processes (the CUDA backend: one process per GPU, none holding every rank's
// parts). partial_global: one process's placed tensors in global form, every logical tensor it
// holds any element of at its global size, NaN where it holds nothing (training values are
// finite: a diverged run stops before it saves). merge_partials: the whole state from every
// process's part, under assemble_global's rules (replicas agree bit for bit, every element held).
std::map<std::string, std::vector<float>> partial_global(const std::vector<PlacedTensor>& mine);
std::map<std::string, std::vector<float>> merge_partials(
    const std::vector<std::map<std::string, std::vector<float>>>& parts);

}  // namespace tandem::exec::cpu
