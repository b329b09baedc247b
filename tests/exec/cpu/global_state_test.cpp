// The training state in global form (exec/cpu/global_state.hpp): assembled from every rank's
// placed parts in one process, or from each process's partial form merged (the CUDA backend's
// checkpoints, one process per GPU): the same tensors either way, and the same refusals.
#include <gtest/gtest.h>

#include <cmath>

#include "exec/cpu/global_state.hpp"

namespace tandem::exec::cpu {
namespace {

// A 2 x 4 weight split by columns over two tensor-parallel ranks (dim 1), and a bias of 4 that
// ZeRO splits flat over them; each rank also holds the replicated norm.
PlacedTensor part(const std::string& name, std::vector<std::int64_t> shape, int dim,
                  std::vector<std::pair<std::int64_t, std::int64_t>> segments, std::int64_t flat_offset,
                  std::vector<float> values) {
  TensorPlacement p;
  p.name = name;
  p.global_shape = std::move(shape);
  p.dim = dim;
  p.segments = std::move(segments);
  p.flat_offset = flat_offset;
  return {p, std::move(values)};
}

std::vector<std::vector<PlacedTensor>> two_ranks() {
  return {{part("w", {2, 4}, 1, {{0, 2}}, 0, {1, 2, 5, 6}), part("b", {4}, 0, {}, 0, {10, 11}),
           part("norm", {2}, 0, {}, 0, {7, 8})},
          {part("w", {2, 4}, 1, {{2, 2}}, 0, {3, 4, 7, 8}), part("b", {4}, 0, {}, 2, {12, 13}),
           part("norm", {2}, 0, {}, 0, {7, 8})}};
}

TEST(GlobalState, MergingEachProcesssPartialFormGivesTheAssembledState) {
  const auto ranks = two_ranks();
  const auto whole = assemble_global(ranks);
  EXPECT_EQ(whole.at("w"), (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(whole.at("b"), (std::vector<float>{10, 11, 12, 13}));
  const auto first = partial_global(ranks[0]), second = partial_global(ranks[1]);
  EXPECT_TRUE(std::isnan(first.at("w")[2])) << "rank 0 holds no element 2 of w";
  EXPECT_EQ(first.at("norm"), (std::vector<float>{7, 8}));
  EXPECT_EQ(merge_partials({first, second}), whole);
}

TEST(GlobalState, MergingRefusesDisagreeingReplicasAndUnheldElements) {
  auto ranks = two_ranks();
  EXPECT_THROW(merge_partials({partial_global(ranks[0])}), std::logic_error);  // w's columns 2-3 missing
  ranks[1][2].values[0] = 9;                                                 // the norm's replicas differ
  EXPECT_THROW(merge_partials({partial_global(ranks[0]), partial_global(ranks[1])}), std::logic_error);
  EXPECT_THROW(assemble_global(ranks), std::logic_error);
}

}  // namespace
}  // namespace tandem::exec::cpu
