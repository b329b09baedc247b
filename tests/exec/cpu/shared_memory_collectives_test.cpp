// Shared-memory collectives (exec/cpu/shared_memory_collectives.hpp) against naive references:
// every result is compared bit for bit with a loop over the ranks in ascending order.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <atomic>
#include <functional>
#include <mutex>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "exec/cpu/shared_memory_collectives.hpp"

namespace tandem::exec::cpu {
namespace {

using I64 = std::int64_t;

// Values of very different magnitudes, so that the summation order shows in the last bits.
std::vector<float> values(int rank, I64 n, int salt = 0) {
  std::vector<float> v(static_cast<std::size_t>(n));
  std::uint32_t x = 2654435761u * static_cast<std::uint32_t>(rank + 1) + 97u * static_cast<std::uint32_t>(salt);
  for (auto& e : v) {
    x = x * 1664525u + 1013904223u;
    const float u = static_cast<float>(x >> 8) / 16777216.0f - 0.5f;
    e = u * std::pow(10.0f, static_cast<float>(static_cast<int>(x % 7)) - 3.0f);
  }
  return v;
}

Group group_of(std::vector<int> ranks, int id = 0) {
  Group g;
  g.id = id;
  g.ranks = std::move(ranks);
  return g;
}

// Runs f(rank) on one thread per member of `ranks`.
void on_threads(const std::vector<int>& ranks, const std::function<void(int)>& f) {
  std::vector<std::thread> threads;
  for (int r : ranks) threads.emplace_back([&, r] { f(r); });
  for (auto& t : threads) t.join();
}

std::vector<float> reference_reduce(const std::vector<std::vector<float>>& by_rank,
                                    const std::vector<int>& ranks_ascending, ReduceOp op) {
  std::vector<float> out = by_rank[ranks_ascending[0]];
  for (std::size_t j = 1; j < ranks_ascending.size(); ++j) {
    const auto& x = by_rank[ranks_ascending[j]];
    for (std::size_t k = 0; k < out.size(); ++k)
      out[k] = op == ReduceOp::max ? std::max(out[k], x[k]) : out[k] + x[k];
  }
  if (op == ReduceOp::avg)
    for (auto& e : out) e /= static_cast<float>(ranks_ascending.size());
  return out;
}

FlatBuffer whole(std::vector<float>& v) { return {Span{v.data(), static_cast<I64>(v.size())}}; }

// Splits v into a bucket of spans of the given sizes (the rest in the last one).
FlatBuffer pieces(std::vector<float>& v, const std::vector<I64>& sizes) {
  FlatBuffer b;
  I64 at = 0;
  for (I64 s : sizes) {
    b.push_back(Span{v.data() + at, s});
    at += s;
  }
  b.push_back(Span{v.data() + at, static_cast<I64>(v.size()) - at});
  return b;
}

// Which member's part element k of a bucket (pieces of the given sizes, the rest last) is in:
// each tensor is sharded on its own (CommShards in strategies/op.hpp), never the concatenation.
int part_owner(I64 k, const std::vector<I64>& sizes, I64 total, int members) {
  I64 start = 0;
  for (std::size_t i = 0; i <= sizes.size(); ++i) {
    const I64 size = i < sizes.size() ? sizes[i] : total - start;
    if (k < start + size) {
      for (int m = 0; m < members; ++m) {
        const auto [lo, hi] = shard_range(size, members, m);
        if (k - start >= lo && k - start < hi) return m;
      }
    }
    start += size;
  }
  return -1;
}

class AllReduce : public ::testing::TestWithParam<std::tuple<int, ReduceOp>> {};

TEST_P(AllReduce, EqualsTheRankOrderReferenceBitForBit) {
  const auto [n, op] = GetParam();
  const I64 size = 10007;  // not divisible by 2, 3 or 4
  std::vector<int> ranks;
  for (int r = 0; r < n; ++r) ranks.push_back(r);
  std::vector<std::vector<float>> data;
  for (int r = 0; r < n; ++r) data.push_back(values(r, size));
  const auto expected = reference_reduce(data, ranks, op);
  SharedMemoryComm comm(std::chrono::seconds(10));
  on_threads(ranks, [&](int r) {
    comm.all_reduce("k", "test.all_reduce", group_of(ranks), r, whole(data[r]), op);
  });
  for (int r = 0; r < n; ++r)
    for (I64 k = 0; k < size; ++k) ASSERT_EQ(data[r][k], expected[k]) << "rank " << r << " element " << k;
  EXPECT_EQ(comm.pending(), 0u);
}

INSTANTIATE_TEST_SUITE_P(Members, AllReduce,
                         ::testing::Combine(::testing::Values(2, 3, 4),
                                            ::testing::Values(ReduceOp::sum, ReduceOp::avg, ReduceOp::max)));

TEST(SharedMemoryCollectives, SumOrderIsAscendingRankWhateverTheRingOrder) {
  const std::vector<int> ring{2, 0, 3, 1};
  const I64 size = 999;
  std::vector<std::vector<float>> data;
  for (int r = 0; r < 4; ++r) data.push_back(values(r, size, 5));
  const auto expected = reference_reduce(data, {0, 1, 2, 3}, ReduceOp::sum);
  SharedMemoryComm comm;
  on_threads(ring, [&](int r) {
    comm.all_reduce("k", "ring", group_of(ring, 7), r, whole(data[r]), ReduceOp::sum);
  });
  for (int r = 0; r < 4; ++r) EXPECT_EQ(data[r], expected) << r;
}

TEST(SharedMemoryCollectives, BucketIsReducedAsOneFlatBufferInPlace) {
  // Three ranks; each holds the same flat data split into differently sized tensors.
  const I64 size = 3001;
  const std::vector<std::vector<I64>> splits{{1000, 1}, {7, 2000, 500}, {3000}};
  std::vector<std::vector<float>> data;
  for (int r = 0; r < 3; ++r) data.push_back(values(r, size, 1));
  const auto expected = reference_reduce(data, {0, 1, 2}, ReduceOp::sum);
  // Separate tensors per rank: copy the pieces into their own vectors.
  std::vector<std::vector<std::vector<float>>> tensors(3);
  for (int r = 0; r < 3; ++r) {
    I64 at = 0;
    std::vector<I64> sizes = splits[r];
    sizes.push_back(size - std::accumulate(sizes.begin(), sizes.end(), I64{0}));
    for (I64 s : sizes) {
      tensors[r].emplace_back(data[r].begin() + at, data[r].begin() + at + s);
      at += s;
    }
  }
  SharedMemoryComm comm;
  on_threads({0, 1, 2}, [&](int r) {
    FlatBuffer bucket;
    for (auto& t : tensors[r]) bucket.push_back(Span{t.data(), static_cast<I64>(t.size())});
    comm.all_reduce("k", "bucket", group_of({0, 1, 2}), r, bucket, ReduceOp::sum);
  });
  for (int r = 0; r < 3; ++r) {
    std::vector<float> flat;
    for (auto& t : tensors[r]) flat.insert(flat.end(), t.begin(), t.end());
    EXPECT_EQ(flat, expected) << r;
  }
}

TEST(SharedMemoryCollectives, ShardRangesAreCeilChunks) {
  EXPECT_EQ(shard_range(12, 4, 3), (std::pair<I64, I64>{9, 12}));
  EXPECT_EQ(shard_range(10, 4, 0), (std::pair<I64, I64>{0, 3}));
  EXPECT_EQ(shard_range(10, 4, 3), (std::pair<I64, I64>{9, 10}));
  EXPECT_EQ(shard_range(2, 4, 3), (std::pair<I64, I64>{2, 2}));  // empty
}

TEST(SharedMemoryCollectives, ReduceScatterWritesEachMembersOwnPartOfEachTensorOnly) {
  for (int n : {2, 3, 4}) {
    for (I64 size : {I64{4096}, I64{1001}}) {
      std::vector<int> ranks;
      for (int r = 0; r < n; ++r) ranks.push_back(r);
      std::vector<std::vector<float>> data, before;
      for (int r = 0; r < n; ++r) data.push_back(values(r, size, 2));
      before = data;
      const auto expected = reference_reduce(data, ranks, ReduceOp::sum);
      SharedMemoryComm comm;
      on_threads(ranks, [&](int r) {
        // As a bucket of two tensors: each is sharded on its own.
        comm.reduce_scatter("k", "rs", group_of(ranks), r, pieces(data[r], {size / 3}), ReduceOp::sum);
      });
      for (int r = 0; r < n; ++r) {
        for (I64 k = 0; k < size; ++k) {
          if (part_owner(k, {size / 3}, size, n) == r) ASSERT_EQ(data[r][k], expected[k]) << n << " " << r << " " << k;
          else ASSERT_EQ(data[r][k], before[r][k]) << "untouched " << n << " " << r << " " << k;
        }
      }
    }
  }
}

TEST(SharedMemoryCollectives, AllGatherAssemblesEachTensorFromTheMembersParts) {
  for (int n : {2, 3, 4}) {
    const I64 size = 1003;
    std::vector<int> ranks;
    for (int r = 0; r < n; ++r) ranks.push_back(r);
    std::vector<std::vector<float>> data;
    for (int r = 0; r < n; ++r) data.push_back(values(r, size, 3));
    std::vector<float> expected(static_cast<std::size_t>(size));
    for (I64 k = 0; k < size; ++k) expected[k] = data[part_owner(k, {17, 400}, size, n)][k];
    SharedMemoryComm comm;
    on_threads(ranks, [&](int r) {
      comm.all_gather("k", "ag", group_of(ranks), r, pieces(data[r], {17, 400}));
    });
    for (int r = 0; r < n; ++r) EXPECT_EQ(data[r], expected) << n << " " << r;
  }
}

TEST(SharedMemoryCollectives, BroadcastCopiesTheRootsBuffer) {
  std::vector<std::vector<float>> data;
  for (int r = 0; r < 3; ++r) data.push_back(values(r, 500, 4));
  const auto expected = data[1];
  SharedMemoryComm comm;
  on_threads({0, 1, 2}, [&](int r) {
    comm.broadcast("k", "bc", group_of({0, 1, 2}), r, whole(data[r]), /*root=*/1);
  });
  for (int r = 0; r < 3; ++r) EXPECT_EQ(data[r], expected);
}

TEST(SharedMemoryCollectives, AllToAllTransposesTheChunks) {
  const int n = 3;
  const I64 chunk = 5;
  std::vector<std::vector<float>> data(n);
  for (int r = 0; r < n; ++r)
    for (int j = 0; j < n; ++j)
      for (I64 k = 0; k < chunk; ++k) data[r].push_back(static_cast<float>(100 * r + 10 * j + k));
  SharedMemoryComm comm;
  on_threads({0, 1, 2}, [&](int r) { comm.all_to_all("k", "a2a", group_of({0, 1, 2}), r, whole(data[r])); });
  for (int r = 0; r < n; ++r)
    for (int j = 0; j < n; ++j)
      for (I64 k = 0; k < chunk; ++k)  // my chunk j = member j's chunk r
        EXPECT_EQ(data[r][j * chunk + k], static_cast<float>(100 * j + 10 * r + k));
}

TEST(SharedMemoryCollectives, SendRecvMatchBySourceDestinationTagInFifoOrder) {
  std::vector<float> a = values(0, 64, 1), b = values(0, 64, 2), c = values(0, 64, 3);
  std::vector<float> ra(64), rb(64), rc(64);
  SharedMemoryComm comm;
  std::thread sender([&] {
    comm.send(0, 1, 0, "s.a", whole(a));
    comm.send(0, 1, 0, "s.b", whole(b));
  });
  std::thread sender_tag([&] { comm.send(0, 1, 5, "s.c", whole(c)); });
  std::thread receiver([&] {
    comm.recv(0, 1, 5, "r.c", whole(rc));  // another tag first: no mix-up
    comm.recv(0, 1, 0, "r.a", whole(ra));
    comm.recv(0, 1, 0, "r.b", whole(rb));
  });
  sender.join();
  sender_tag.join();
  receiver.join();
  EXPECT_EQ(ra, a);
  EXPECT_EQ(rb, b);
  EXPECT_EQ(rc, c);
  EXPECT_EQ(comm.pending(), 0u);
}

TEST(SharedMemoryCollectives, APostedSendCompletesWhenItsReceiverCopiesIt) {
  std::vector<float> a = values(0, 64, 1), ra(64);
  SharedMemoryComm comm;
  std::atomic<int> done{0};
  std::string error = "not called";
  // No receive yet: the send is left in the mailbox and the sender goes on.
  comm.post_send(0, 1, 3, "s.a", whole(a), [&](const std::string& e) { error = e, ++done; });
  EXPECT_EQ(done.load(), 0);
  EXPECT_EQ(comm.pending(), 1u);
  comm.recv(0, 1, 3, "r.a", whole(ra));  // copies it, and completes the send
  EXPECT_EQ(done.load(), 1);
  EXPECT_EQ(error, "");
  EXPECT_EQ(ra, a);
  // The receive first: the posted send is copied at once, on the sender's thread.
  std::vector<float> b = values(0, 64, 2), rb(64);
  std::thread receiver([&] { comm.recv(0, 1, 4, "r.b", whole(rb)); });
  while (comm.pending() == 0) std::this_thread::yield();
  comm.post_send(0, 1, 4, "s.b", whole(b), [&](const std::string& e) { error = e, ++done; });
  EXPECT_EQ(done.load(), 2);
  receiver.join();
  EXPECT_EQ(rb, b);
  EXPECT_EQ(comm.pending(), 0u);
}

TEST(SharedMemoryCollectives, APostedSendOfTheWrongSizeReportsTheReceiversError) {
  std::vector<float> a(10), ra(12);
  SharedMemoryComm comm;
  std::string error;
  comm.post_send(0, 1, 0, "s.a", whole(a), [&](const std::string& e) { error = e; });
  EXPECT_THROW(comm.recv(0, 1, 0, "r.a", whole(ra)), std::runtime_error);
  EXPECT_NE(error.find("expects 12 elements"), std::string::npos) << error;
}

TEST(SharedMemoryCollectives, MismatchedSizesFailEveryMember) {
  std::vector<float> a(10), b(12);
  SharedMemoryComm comm(std::chrono::seconds(5));
  int failures = 0;
  std::mutex m;
  on_threads({0, 1}, [&](int r) {
    try {
      comm.all_reduce("k", "bad", group_of({0, 1}), r, whole(r == 0 ? a : b), ReduceOp::sum);
    } catch (const std::runtime_error& e) {
      std::lock_guard<std::mutex> lock(m);
      ++failures;
      EXPECT_NE(std::string(e.what()).find("elements"), std::string::npos) << e.what();
    }
  });
  EXPECT_EQ(failures, 2);
}

TEST(SharedMemoryCollectives, AMissingMemberTimesOutNamingIt) {
  std::vector<float> a(10);
  SharedMemoryComm comm(std::chrono::milliseconds(200));
  const auto t0 = std::chrono::steady_clock::now();
  try {
    comm.all_reduce("k", "dp.bucket0.all_reduce", group_of({0, 1, 2}), 0, whole(a), ReduceOp::sum);
    FAIL() << "no timeout";
  } catch (const AbortedError&) {
    FAIL() << "not aborted";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("timed out"), std::string::npos) << what;
    EXPECT_NE(what.find("dp.bucket0.all_reduce"), std::string::npos) << what;
    EXPECT_NE(what.find("rank(s) 1, 2 never joined"), std::string::npos) << what;
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3));
}

TEST(SharedMemoryCollectives, AbortUnblocksEveryWaiter) {
  std::vector<float> a(10), b(10);
  SharedMemoryComm comm(std::chrono::seconds(60));
  std::atomic<int> aborted{0};
  std::thread waiter([&] {
    try {
      comm.all_reduce("k", "x", group_of({0, 1}), 0, whole(a), ReduceOp::sum);
    } catch (const AbortedError&) {
      ++aborted;
    }
  });
  std::thread receiver([&] {
    try {
      comm.recv(1, 0, 0, "r", whole(b));
    } catch (const AbortedError&) {
      ++aborted;
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const auto t0 = std::chrono::steady_clock::now();
  comm.abort();
  waiter.join();
  receiver.join();
  EXPECT_EQ(aborted.load(), 2);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  EXPECT_THROW(comm.send(0, 1, 0, "late", whole(a)), AbortedError);
}

}  // namespace
}  // namespace tandem::exec::cpu
