// Initial parameter values (exec/cpu/data.hpp): a large tensor is filled by several threads, and
// its values must be those of one element at a time, whatever the thread count, the placement
// or the sharding; checkpoints, the CUDA backend and every strategy's equivalence rest on it.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "exec/cpu/data.hpp"
#include "strategies/tensor.hpp"

namespace tandem::exec::cpu {
namespace {

constexpr std::uint64_t kSeed = 1234;
constexpr float kStd = 0.02f;

// The values of `name` one element at a time: a one-element placement per index (never threaded).
std::vector<float> one_by_one(const std::string& name, std::int64_t n, std::int64_t first = 0) {
  std::vector<float> v(static_cast<std::size_t>(n));
  TensorPlacement at = whole_tensor(name, {first + n});
  for (std::int64_t i = 0; i < n; ++i) {
    at.flat_offset = first + i;
    init_placed(at, name, &v[static_cast<std::size_t>(i)], 1, kSeed, kStd);
  }
  return v;
}

void expect_bitwise_equal(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(std::memcmp(got.data(), want.data(), sizeof(float) * got.size()), 0);
}

TEST(InitialValues, ALargeTensorFilledByThreadsHoldsTheValuesOfOneElementAtATime) {
  const std::int64_t n = 600'000;  // past the threaded fill's threshold for several threads
  std::vector<float> whole(static_cast<std::size_t>(n));
  init_parameter("layer0.mlp.fc1.weight", whole.data(), n, kSeed, kStd);
  expect_bitwise_equal(whole, one_by_one("layer0.mlp.fc1.weight", n));
}

TEST(InitialValues, AZeroShardOfALargeTensorHoldsItsPartOfTheWholeAndZeroPadding) {
  const std::int64_t n = 500'000, first = 123'457, part = 400'000;  // the last 22,543 are padding
  std::vector<float> shard(static_cast<std::size_t>(part), -1.0f);
  TensorPlacement at = whole_tensor("embedding.word.weight", {n});
  at.flat_offset = first;
  init_placed(at, "embedding.word.weight", shard.data(), part, kSeed, kStd);
  std::vector<float> want = one_by_one("embedding.word.weight", n - first, first);
  want.resize(static_cast<std::size_t>(part), 0.0f);
  expect_bitwise_equal(shard, want);
}

TEST(InitialValues, ATensorParallelColumnSliceHoldsTheWholesColumns) {
  const std::int64_t rows = 600, cols = 1200, begin = 400, width = 500;
  std::vector<float> whole(static_cast<std::size_t>(rows * cols));
  init_parameter("layer0.attn.qkv.weight", whole.data(), rows * cols, kSeed, kStd);
  TensorPlacement at = whole_tensor("layer0.attn.qkv.weight", {rows, cols});
  at.dim = 1;
  at.segments = {{begin, width}};
  std::vector<float> slice(static_cast<std::size_t>(rows * width));
  init_placed(at, "layer0.attn.qkv.weight", slice.data(), rows * width, kSeed, kStd);
  std::vector<float> want;
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = begin; c < begin + width; ++c) want.push_back(whole[static_cast<std::size_t>(r * cols + c)]);
  expect_bitwise_equal(slice, want);
}

TEST(InitialValues, NormWeightsStartAtOneAndBiasesAtZeroWhateverTheirSize) {
  const std::int64_t n = 400'000;
  std::vector<float> norm(static_cast<std::size_t>(n)), bias(static_cast<std::size_t>(n), 5.0f);
  init_parameter("layer3.attn.norm.weight", norm.data(), n, kSeed, kStd);
  init_parameter("layer3.mlp.fc2.bias", bias.data(), n, kSeed, kStd);
  for (std::int64_t i = 0; i < n; i += 997) {
    EXPECT_EQ(norm[static_cast<std::size_t>(i)], 1.0f) << i;
    EXPECT_EQ(bias[static_cast<std::size_t>(i)], 0.0f) << i;
  }
}

}  // namespace
}  // namespace tandem::exec::cpu
