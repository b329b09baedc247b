#include "analysis/critical_path.hpp"

#include <gtest/gtest.h>

#include "tests/analysis/trace_builders.hpp"

namespace tandem {
namespace {

using analysis_test::all_reduce;
using analysis_test::gemm;
using analysis_test::op;

std::vector<std::string> path_ops(const CriticalPath& path) {
  std::vector<std::string> out;
  for (const auto& step : path.steps) out.push_back(step.op.op_id + "@" + std::to_string(step.op.rank));
  return out;
}

TEST(CriticalPath, FollowsStreamOrderAndReportsGaps) {
  // b waits 1 s after a (a launch gap), c follows b at once.
  const CriticalPath path = critical_path({gemm(0, 0, "a", 0, 1), gemm(0, 0, "b", 2, 3), gemm(0, 0, "c", 3, 5)});
  EXPECT_EQ(path_ops(path), (std::vector<std::string>{"a@0", "b@0", "c@0"}));
  EXPECT_EQ(path.steps[0].reached_by, PathLink::first);
  EXPECT_EQ(path.steps[1].reached_by, PathLink::stream_order);
  EXPECT_DOUBLE_EQ(path.steps[1].gap_before_s, 1);
  EXPECT_DOUBLE_EQ(path.length_s, 5);
  EXPECT_DOUBLE_EQ(path.busy_s, 4);
  EXPECT_DOUBLE_EQ(path.gap_s, 1);
  EXPECT_DOUBLE_EQ(path.busy_by_kind_s.at(OpKind::gemm), 4);
}

TEST(CriticalPath, CrossesStreamsWhereAnOpWaitedForAnotherStream) {
  // The optimizer step waits for the gradient all-reduce, which waited for the backward GEMM; a
  // short independent compute op in between is not on the path.
  const CriticalPath path = critical_path({gemm(0, 0, "bwd", 0, 1), all_reduce(0, 0, "grad_ar", 1, 4),
                                           gemm(0, 0, "other", 1, 2), gemm(0, 0, "step", 4, 5)});
  EXPECT_EQ(path_ops(path), (std::vector<std::string>{"bwd@0", "grad_ar@0", "step@0"}));
  EXPECT_EQ(path.steps[1].reached_by, PathLink::cross_stream);
  EXPECT_EQ(path.steps[2].reached_by, PathLink::cross_stream);
  EXPECT_DOUBLE_EQ(path.busy_by_kind_s.at(OpKind::all_reduce), 3);
  EXPECT_DOUBLE_EQ(path.gap_s, 0);
}

TEST(CriticalPath, ACollectiveIsOnThePathThroughItsLastArrival) {
  // Rank 1 computes longer, so rank 0's all-reduce waits for it; rank 0's step then ends the
  // iteration. The path goes through rank 1's compute, not rank 0's.
  const CriticalPath path = critical_path({gemm(0, 0, "fwd", 0, 1), all_reduce(0, 0, "ar", 1, 5),
                                           gemm(1, 0, "fwd", 0, 4), all_reduce(1, 0, "ar", 4, 5),
                                           gemm(0, 0, "step", 5, 6), gemm(1, 0, "step", 5, 5.5)});
  EXPECT_EQ(path_ops(path), (std::vector<std::string>{"fwd@1", "ar@1", "step@0"}));
  EXPECT_EQ(path.steps[2].reached_by, PathLink::rendezvous);
  EXPECT_DOUBLE_EQ(path.length_s, 6);
  EXPECT_DOUBLE_EQ(path.busy_s, 6);
}

TEST(CriticalPath, ARecvIsOnThePathThroughTheMatchingSendWhenTheSenderWasLate) {
  TraceRecord send = op(0, 0, "send.mb0", OpKind::send, Stream::pp_send, 2, 3);
  send.peer = 1;
  TraceRecord recv = op(1, 0, "recv.mb0", OpKind::recv, Stream::pp_recv, 0.5, 3);
  recv.peer = 0;
  const CriticalPath path = critical_path({gemm(0, 0, "stage0", 0, 2), send, recv, gemm(1, 0, "stage1", 3, 4)});
  EXPECT_EQ(path_ops(path), (std::vector<std::string>{"stage0@0", "send.mb0@0", "stage1@1"}));
  EXPECT_EQ(path.steps[2].reached_by, PathLink::rendezvous);
}

TEST(CriticalPath, EmptyIterationHasAnEmptyPath) {
  const CriticalPath path = critical_path({});
  EXPECT_TRUE(path.steps.empty());
  EXPECT_DOUBLE_EQ(path.length_s, 0);
}

}  // namespace
}  // namespace tandem
