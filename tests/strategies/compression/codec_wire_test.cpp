// What each codec issues through the per-rank interface for one bucket: its collectives carry
// the encoded sizes (the bytes the simulator's flows move), its encode ops run before the first
// collective and its decode after the last one, on the compute stream, with FLOPs and bytes to
// price. A bucket of two gradients, [256, 128] and [128] in bf16, over 8 ranks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "strategies/compression/gradient_codec.hpp"
#include "strategies/gradient_sync.hpp"
#include "tests/strategies/recording_runtime.hpp"

namespace tandem {
namespace {

constexpr int kRanks = 8;
constexpr std::int64_t kRows = 256, kCols = 128, kNumel = kRows * kCols + kCols;

struct Issued {
  std::vector<testing::RecordedOp> comms, computes;
};

Issued reduce_one_bucket(const CompressionConfig& config) {
  testing::RecordingRuntime rt(3, kRanks);
  Group group;
  group.id = 0;
  group.ranks.resize(kRanks);
  std::iota(group.ranks.begin(), group.ranks.end(), 0);
  const std::vector<Tensor> grads{rt.alloc("w.grad", {kRows, kCols}, DType::bf16, MemCategory::gradients),
                                  rt.alloc("b.grad", {kCols}, DType::bf16, MemCategory::gradients)};
  auto codec = make_gradient_codec(config);
  GradientBuckets buckets(group, 1 << 30, GradientBuckets::Reduction::all_reduce);
  buckets.set_codec(codec.get());
  buckets.add(rt, grads);
  buckets.launch(rt);
  buckets.wait_all(rt);
  Issued issued;
  for (const auto& op : rt.ops()) (op.is_comm ? issued.comms : issued.computes).push_back(op);
  EXPECT_TRUE(rt.errors().empty());
  return issued;
}

CompressionConfig codec(Compression type) {
  CompressionConfig c;
  c.type = type;
  return c;
}

// Every compute op is priced; the first collective follows an encode, the last one precedes a
// decode that waits for it.
void expect_encode_collectives_decode(const Issued& in) {
  ASSERT_FALSE(in.comms.empty());
  ASSERT_FALSE(in.computes.empty());
  for (const auto& op : in.computes) {
    EXPECT_GT(op.bytes, 0) << op.label;
    EXPECT_EQ(op.stream, Stream::compute) << op.label;
  }
  for (const auto& op : in.comms) EXPECT_EQ(op.stream, Stream::dp_comm) << op.label;
  EXPECT_LT(in.computes.front().id, in.comms.front().id);
  const auto decode_it = std::find_if(in.computes.begin(), in.computes.end(),
                                      [&](const auto& op) { return op.id > in.comms.back().id; });
  ASSERT_NE(decode_it, in.computes.end()) << "no decode after the last collective";
  const auto& decode = *decode_it;
  bool waits = false;
  for (const Handle& h : decode.after) waits |= h.id == in.comms.back().id;
  EXPECT_TRUE(waits) << decode.label << " waits for " << in.comms.back().label;
}

TEST(CodecWire, Fp16AllReducesTwoBytesAnElement) {
  const Issued in = reduce_one_bucket(codec(Compression::fp16));
  expect_encode_collectives_decode(in);
  ASSERT_EQ(in.comms.size(), 1u);
  EXPECT_EQ(in.comms[0].kind, OpKind::all_reduce);
  EXPECT_EQ(in.comms[0].bytes, 2.0 * kNumel);
}

TEST(CodecWire, QuantizedCodecsSendOneRowPerMemberBothWays) {
  const std::int64_t chunk = (kNumel + kRanks - 1) / kRanks;
  for (auto [type, row_words] : {std::pair{Compression::int8, 1 + (chunk + 3) / 4},
                                 std::pair{Compression::one_bit, 1 + (chunk + 31) / 32}}) {
    const Issued in = reduce_one_bucket(codec(type));
    expect_encode_collectives_decode(in);
    ASSERT_EQ(in.comms.size(), 2u);
    EXPECT_EQ(in.comms[0].kind, OpKind::all_to_all);
    EXPECT_EQ(in.comms[1].kind, OpKind::all_gather);
    for (const auto& c : in.comms) EXPECT_EQ(c.bytes, 4.0 * kRanks * row_words) << to_string(type);
  }
}

TEST(CodecWire, TopKAllGathersKPairsPerMember) {
  CompressionConfig c = codec(Compression::top_k);
  c.topk_ratio = 0.01;
  const Issued in = reduce_one_bucket(c);
  expect_encode_collectives_decode(in);
  ASSERT_EQ(in.comms.size(), 1u);
  const auto k = static_cast<std::int64_t>(std::ceil(0.01 * kNumel));
  EXPECT_EQ(in.comms[0].kind, OpKind::all_gather);
  EXPECT_EQ(in.comms[0].bytes, 8.0 * kRanks * k);
}

TEST(CodecWire, PowerSgdAllReducesTheFactorsAndTheVectorsAsTheyAre) {
  CompressionConfig c = codec(Compression::power_sgd);
  c.matrix_approximation_rank = 4;
  const Issued in = reduce_one_bucket(c);
  expect_encode_collectives_decode(in);
  ASSERT_EQ(in.comms.size(), 2u);
  EXPECT_EQ(in.comms[0].bytes, 4.0 * kRows * 4 + 2.0 * kCols);  // P (fp32) + the bf16 bias as it is
  EXPECT_EQ(in.comms[1].bytes, 4.0 * kCols * 4);                // Q
  // A matrix whose rank-r factors are not min_compression_rate times smaller goes as it is.
  c.matrix_approximation_rank = 64;  // (256 + 128)·64·2 > 256·128
  const Issued plain = reduce_one_bucket(c);
  ASSERT_EQ(plain.comms.size(), 1u);
  EXPECT_EQ(plain.comms[0].bytes, 2.0 * kNumel);
}

}  // namespace
}  // namespace tandem
