// The lower-bound replay of one rank's iteration (search/rank_timeline.hpp): what each
// collective must at least receive, and the stream semantics the simulator realises.
#include <gtest/gtest.h>

#include "strategies/search/rank_timeline.hpp"

namespace tandem::search {
namespace {

CommOp collective(OpKind kind, Bytes bytes, int members, int root = -1) {
  CommOp op;
  op.kind = kind;
  op.bytes = bytes;
  for (int r = 0; r < members; ++r) op.group.ranks.push_back(r);
  op.root = root;
  return op;
}

TEST(RankTimeline, LeastReceivedBytesOfEachCollective) {
  const double port = 100;  // bytes per second
  EXPECT_DOUBLE_EQ(least_comm_seconds(collective(OpKind::all_reduce, 800, 8), 0, port), 8.0);
  EXPECT_DOUBLE_EQ(least_comm_seconds(collective(OpKind::all_gather, 800, 8), 0, port), 7.0);
  EXPECT_DOUBLE_EQ(least_comm_seconds(collective(OpKind::reduce_scatter, 800, 8), 0, port), 1.0);
  EXPECT_DOUBLE_EQ(least_comm_seconds(collective(OpKind::broadcast, 800, 8, 3), 0, port), 8.0);
  EXPECT_DOUBLE_EQ(least_comm_seconds(collective(OpKind::broadcast, 800, 8, 3), 3, port), 0.0);
  EXPECT_DOUBLE_EQ(least_comm_seconds(collective(OpKind::all_to_all, 800, 8), 0, port), 0.0);
  EXPECT_DOUBLE_EQ(least_comm_seconds(collective(OpKind::all_reduce, 800, 1), 0, port), 0.0) << "a group of one";
  CommOp send;
  send.kind = OpKind::send;
  send.bytes = 300;
  EXPECT_DOUBLE_EQ(least_comm_seconds(send, 0, port), 3.0);
  EXPECT_DOUBLE_EQ(least_comm_seconds(send, 0, 0), 0.0) << "no port known: no bound";
}

TEST(RankTimeline, CommunicationStartsAfterTheComputeIssuedBeforeIt) {
  RankTimeline t(100);
  t.compute(2.0, Phase::forward, {});
  const Handle reduce = t.communicate(collective(OpKind::all_reduce, 300, 2), 0, Stream::tp_comm, {});
  EXPECT_DOUBLE_EQ(t.host_end_s(), 2.0) << "the host does not wait for it";
  t.compute(1.0, Phase::forward, {reduce});  // waits: 2 + 3, then 1
  EXPECT_DOUBLE_EQ(t.host_end_s(), 6.0);
  EXPECT_DOUBLE_EQ(t.compute_s(), 3.0);
  EXPECT_DOUBLE_EQ(t.forward_s(), 3.0);
}

TEST(RankTimeline, StreamsAreSerialAndWaitHoldsTheHost) {
  RankTimeline t(100);
  const Handle a = t.communicate(collective(OpKind::all_reduce, 400, 2), 0, Stream::dp_comm, {});
  const Handle b = t.communicate(collective(OpKind::all_reduce, 400, 2), 0, Stream::dp_comm, {});
  t.compute(1.0, Phase::backward, {});
  EXPECT_DOUBLE_EQ(t.host_end_s(), 1.0) << "compute overlaps communication";
  t.wait(a);
  EXPECT_DOUBLE_EQ(t.host_end_s(), 4.0);
  t.wait(b);
  EXPECT_DOUBLE_EQ(t.host_end_s(), 8.0) << "the second waited for the first on its stream";
  EXPECT_DOUBLE_EQ(t.backward_s(), 1.0);
  const Handle recorded = t.record(Stream::dp_comm);
  t.communicate(collective(OpKind::all_reduce, 100, 2), 0, Stream::tp_comm, {recorded});
  t.synchronize();
  EXPECT_DOUBLE_EQ(t.host_end_s(), 9.0);
}

}  // namespace
}  // namespace tandem::search
