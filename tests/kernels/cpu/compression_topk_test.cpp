// Top-k selection and its scatter: the k largest magnitudes in index order, ties to the lower
// index, the residual zeroed where an entry was sent; the scatter sums every rank's pairs and
// refuses an index outside the tensor.
#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <vector>

#include "kernels/cpu/compression_topk.hpp"

namespace tandem::kernels::cpu {
namespace {

TEST(CompressionTopK, SelectsTheLargestMagnitudesInIndexOrder) {
  std::vector<float> x{0.1f, -5.0f, 2.0f, 0.0f, 3.0f, -2.0f};
  std::vector<std::int32_t> idx(3);
  std::vector<float> val(3);
  top_k_select(idx.data(), val.data(), x.data(), 6, 3, x.data());
  // |x| = 5, 3, then a tie at 2 between index 2 and 5: the lower index wins.
  EXPECT_EQ(idx, (std::vector<std::int32_t>{1, 2, 4}));
  EXPECT_EQ(val, (std::vector<float>{-5.0f, 2.0f, 3.0f}));
  EXPECT_EQ(x, (std::vector<float>{0.1f, 0.0f, 0.0f, 0.0f, 0.0f, -2.0f}));  // what waits for later
}

TEST(CompressionTopK, KEqualToTheSizeSendsEverything) {
  const std::vector<float> x{1.0f, -1.0f, 0.5f};
  std::vector<std::int32_t> idx(3);
  std::vector<float> val(3);
  top_k_select(idx.data(), val.data(), x.data(), 3, 3, nullptr);
  EXPECT_EQ(idx, (std::vector<std::int32_t>{0, 1, 2}));
  EXPECT_EQ(val, x);
  EXPECT_THROW(top_k_select(idx.data(), val.data(), x.data(), 3, 4, nullptr), std::invalid_argument);
}

TEST(CompressionTopK, ScatterAddSumsEveryPairAndRefusesOutOfRangeIndices) {
  std::vector<float> y(4, 0.0f);
  const std::vector<std::int32_t> a{0, 3}, b{3, 1};
  const std::vector<float> va{1.0f, 2.0f}, vb{0.5f, -1.0f};
  scatter_add(y.data(), 4, a.data(), va.data(), 2);
  scatter_add(y.data(), 4, b.data(), vb.data(), 2);
  EXPECT_EQ(y, (std::vector<float>{1.0f, -1.0f, 0.0f, 2.5f}));
  const std::vector<std::int32_t> bad{4};
  EXPECT_THROW(scatter_add(y.data(), 4, bad.data(), va.data(), 1), std::out_of_range);
}

}  // namespace
}  // namespace tandem::kernels::cpu
