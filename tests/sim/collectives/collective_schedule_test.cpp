// The schedules themselves, without SimGrid: every send has its matching receive on the same
// global step (so no algorithm can deadlock or mismatch on a FIFO channel), steps compress into
// runs, NCCL's tree shapes, names, and the fidelity threshold.
#include <gtest/gtest.h>

#include <map>
#include <stdexcept>
#include <tuple>

#include "sim/collectives/algorithms.hpp"
#include "tests/sim/collectives/collective_harness.hpp"

namespace tandem::sim::collectives {
namespace {

// (src, dst) -> sequence of (phase, step, lane, bytes) as the sender sees it and as the receiver does.
using Edge = std::pair<int, int>;
using Message = std::tuple<std::size_t, int, int, double>;

void expect_matched(const std::vector<int>& ranks, OpKind kind, CollectiveAlgorithm algorithm, Bytes bytes, int root,
                    const TopologyView& topology) {
  const GroupShape shape = analyze_group(ranks, topology);
  const CollectiveAlgorithm effective = effective_algorithm(algorithm, kind, shape);
  std::map<Edge, std::vector<Message>> sent, received;
  CollectiveCall call;
  call.kind = kind;
  call.bytes = bytes;
  call.ranks = ranks;
  call.root = root;
  std::size_t phases = 0;
  for (int me = 0; me < static_cast<int>(ranks.size()); ++me) {
    call.me = me;
    const Schedule schedule = build_schedule(call, effective, shape, topology);
    if (me == 0) phases = schedule.phases.size();
    ASSERT_EQ(schedule.phases.size(), phases) << "members disagree on the number of phases";
    for (std::size_t p = 0; p < schedule.phases.size(); ++p) {
      int previous_end = 0;
      for (const StepRun& run : schedule.phases[p].runs) {
        EXPECT_GE(run.first, previous_end) << "runs overlap";
        EXPECT_GT(run.count, 0);
        previous_end = run.first + run.count;
        for (int s = run.first; s < run.first + run.count; ++s) {
          for (const Transfer& t : run.sends) sent[{ranks[me], t.peer}].emplace_back(p, s, t.lane, t.bytes);
          for (const Transfer& t : run.recvs) received[{t.peer, ranks[me]}].emplace_back(p, s, t.lane, t.bytes);
        }
      }
    }
  }
  for (auto& [edge, messages] : sent) std::sort(messages.begin(), messages.end());
  for (auto& [edge, messages] : received) std::sort(messages.begin(), messages.end());
  EXPECT_EQ(sent, received) << to_string(effective) << " " << to_string(kind) << " n=" << ranks.size();
}

TEST(CollectiveSchedule, EverySendHasItsReceiveOnTheSameStep) {
  const auto topology = sim_test::collectives::topology_of(sim_test::collectives::PlatformSpec::two_level(1, 4, 1e11, 1e10));
  for (int n : {2, 3, 4, 5, 7, 8, 12, 16, 17, 31, 32}) {
    const auto ranks = sim_test::collectives::iota_ranks(n);
    for (CollectiveAlgorithm algorithm : {CollectiveAlgorithm::ring, CollectiveAlgorithm::tree,
                                          CollectiveAlgorithm::hierarchical, CollectiveAlgorithm::direct}) {
      for (OpKind kind : {OpKind::all_reduce, OpKind::reduce_scatter, OpKind::all_gather, OpKind::broadcast,
                          OpKind::all_to_all}) {
        for (Bytes bytes : {0.0, 1000.0, 5e6}) expect_matched(ranks, kind, algorithm, bytes, n / 2, topology);
      }
    }
  }
  // Group order interleaved across nodes (hierarchical must find nodes and local indices itself).
  std::vector<int> interleaved;
  for (int local = 0; local < 4; ++local)
    for (int node = 0; node < 6; ++node) interleaved.push_back(node * 4 + local);
  for (CollectiveAlgorithm algorithm : {CollectiveAlgorithm::ring, CollectiveAlgorithm::tree,
                                        CollectiveAlgorithm::hierarchical, CollectiveAlgorithm::direct})
    for (OpKind kind : {OpKind::all_reduce, OpKind::reduce_scatter, OpKind::all_gather, OpKind::broadcast})
      expect_matched(interleaved, kind, algorithm, 3e6, 5, topology);
}

TEST(CollectiveSchedule, RingIsOneRunOfIdenticalSteps) {
  CollectiveCall call;
  call.kind = OpKind::all_reduce;
  call.bytes = 1e9;
  call.ranks = sim_test::collectives::iota_ranks(4096);
  call.me = 17;
  const Schedule schedule = ring_schedule(call, TopologyView{});
  ASSERT_EQ(schedule.phases.size(), 1u);
  ASSERT_EQ(schedule.phases[0].runs.size(), 1u);
  const StepRun& run = schedule.phases[0].runs[0];
  EXPECT_EQ(run.count, 2 * 4095);
  ASSERT_EQ(run.sends.size(), 1u);
  EXPECT_EQ(run.sends[0].peer, 18);
  EXPECT_EQ(run.recvs[0].peer, 16);
  EXPECT_DOUBLE_EQ(run.sends[0].bytes, 1e9 / 4096);
  EXPECT_EQ(exact_transfer_count(schedule), 2 * 4095);
}

TEST(CollectiveSchedule, PhaseBuilderSplitsOverlappingIntervalsIntoRuns) {
  PhaseBuilder builder;
  builder.recv(0, 4, 7, 10.0);  // steps 0..3
  builder.send(2, 4, 8, 10.0);  // steps 2..5
  builder.send(9, 1, 9, 5.0);   // step 9, after a gap
  const Phase phase = builder.build(1e-6);
  ASSERT_EQ(phase.runs.size(), 4u);
  EXPECT_EQ(phase.runs[0].first, 0);
  EXPECT_EQ(phase.runs[0].count, 2);
  EXPECT_EQ(phase.runs[1].first, 2);
  EXPECT_EQ(phase.runs[1].count, 2);
  EXPECT_EQ(phase.runs[1].sends.size(), 1u);
  EXPECT_EQ(phase.runs[1].recvs.size(), 1u);
  EXPECT_EQ(phase.runs[2].first, 4);
  EXPECT_EQ(phase.runs[3].first, 9);
  EXPECT_EQ(phase.span, 10);
  EXPECT_EQ(phase.active_steps, 7);
}

TEST(TreeCollective, NcclBinaryTreeShape) {
  // ncclGetBtree for 8 ranks: 0 -> 4; 4 -> 2, 6; 2 -> 1, 3; 6 -> 5, 7.
  EXPECT_EQ(btree(8, 0).parent, -1);
  EXPECT_EQ(btree(8, 0).child[1], 4);
  EXPECT_EQ(btree(8, 4).parent, 0);
  EXPECT_EQ(btree(8, 4).child[0], 2);
  EXPECT_EQ(btree(8, 4).child[1], 6);
  EXPECT_EQ(btree(8, 6).child[0], 5);
  EXPECT_EQ(btree(8, 6).child[1], 7);
  EXPECT_EQ(btree(8, 3).parent, 2);
  EXPECT_EQ(tree_height(8, 0), 3);
  // The double tree: in a group of even size every rank is a leaf in at least one tree, so the
  // two trees share the load; each tree spans everyone exactly once.
  for (int n : {2, 6, 8, 16, 24, 64, 1000}) {
    for (int which = 0; which < 2; ++which) {
      int roots = 0;
      std::vector<int> parents_seen(n, 0);
      for (int r = 0; r < n; ++r) {
        const TreeLinks t = double_tree(n, r, which);
        if (t.parent < 0) ++roots;
        for (int c : t.child)
          if (c >= 0) {
            EXPECT_EQ(double_tree(n, c, which).parent, r);
            ++parents_seen[c];
          }
      }
      EXPECT_EQ(roots, 1);
      for (int r = 0; r < n; ++r) EXPECT_EQ(parents_seen[r], double_tree(n, r, which).parent >= 0 ? 1 : 0);
    }
    for (int r = 0; r < n; ++r) {
      const bool inner0 = double_tree(n, r, 0).child[0] >= 0 || double_tree(n, r, 0).child[1] >= 0;
      const bool inner1 = double_tree(n, r, 1).child[0] >= 0 || double_tree(n, r, 1).child[1] >= 0;
      EXPECT_FALSE(inner0 && inner1) << "rank " << r << " of " << n << " is inner in both trees";
    }
  }
}

TEST(CollectiveSchedule, NamesRoundTripAndBadNamesThrow) {
  for (auto a : {CollectiveAlgorithm::automatic, CollectiveAlgorithm::ring, CollectiveAlgorithm::tree,
                 CollectiveAlgorithm::hierarchical, CollectiveAlgorithm::direct})
    EXPECT_EQ(parse_collective_algorithm(to_string(a)), a);
  for (auto f : {CollectiveFidelity::automatic, CollectiveFidelity::exact, CollectiveFidelity::aggregated})
    EXPECT_EQ(parse_collective_fidelity(to_string(f)), f);
  EXPECT_THROW(parse_collective_algorithm("butterfly"), std::invalid_argument);
  EXPECT_THROW(parse_collective_fidelity("fast"), std::invalid_argument);
}

TEST(CollectiveSchedule, FidelityThresholdAndFallbacks) {
  // steps x members <= 4096: a 45-rank ring all-reduce is exact (88 x 45 = 3960), 46 is not.
  EXPECT_EQ(choose_fidelity(CollectiveAlgorithm::ring, OpKind::all_reduce, 45), CollectiveFidelity::exact);
  EXPECT_EQ(choose_fidelity(CollectiveAlgorithm::ring, OpKind::all_reduce, 46), CollectiveFidelity::aggregated);
  // Without the size, pipelined algorithms count their longest pipeline (512 chunks).
  EXPECT_EQ(choose_fidelity(CollectiveAlgorithm::tree, OpKind::all_reduce, 4), CollectiveFidelity::exact);
  EXPECT_EQ(choose_fidelity(CollectiveAlgorithm::tree, OpKind::all_reduce, 8), CollectiveFidelity::aggregated);
  EXPECT_EQ(choose_fidelity(CollectiveAlgorithm::ring, OpKind::broadcast, 8), CollectiveFidelity::aggregated);
  // With the size (run_collective's automatic), a small tree all-reduce stays exact.
  GroupShape s256;
  s256.size = 256;
  EXPECT_EQ(fidelity_for(CollectiveAlgorithm::tree, OpKind::all_reduce, 4096, s256), CollectiveFidelity::exact);
  EXPECT_EQ(fidelity_for(CollectiveAlgorithm::tree, OpKind::all_reduce, 1e9, s256), CollectiveFidelity::aggregated);
  EXPECT_EQ(choose_fidelity(CollectiveAlgorithm::direct, OpKind::all_to_all, 64), CollectiveFidelity::exact);
  EXPECT_EQ(choose_fidelity(CollectiveAlgorithm::direct, OpKind::all_to_all, 65), CollectiveFidelity::aggregated);

  GroupShape shape;
  shape.size = 8;
  EXPECT_EQ(effective_algorithm(CollectiveAlgorithm::tree, OpKind::all_gather, shape), CollectiveAlgorithm::ring);
  EXPECT_EQ(effective_algorithm(CollectiveAlgorithm::ring, OpKind::all_to_all, shape), CollectiveAlgorithm::direct);
  EXPECT_EQ(effective_algorithm(CollectiveAlgorithm::hierarchical, OpKind::all_reduce, shape), CollectiveAlgorithm::ring);
}

class NoTransfers final : public PointToPoint {
 public:
  simgrid::s4u::CommPtr send_async(int, Bytes, const std::string&) override { throw std::logic_error("send"); }
  simgrid::s4u::CommPtr recv_async(int, Bytes, const std::string&) override { throw std::logic_error("recv"); }
};

TEST(CollectiveSchedule, RunCollectiveValidatesAndSkipsSingletons) {
  NoTransfers p2p;
  CollectiveCall call;
  call.ranks = {3};
  call.bytes = 1e6;
  EXPECT_NO_THROW(run_collective(call, CollectiveAlgorithm::automatic, CollectiveFidelity::automatic, p2p, {}));
  call.kind = OpKind::send;
  EXPECT_THROW(run_collective(call, CollectiveAlgorithm::ring, CollectiveFidelity::exact, p2p, {}), std::invalid_argument);
  call.kind = OpKind::all_reduce;
  call.ranks = {0, 1};
  call.me = 2;
  EXPECT_THROW(run_collective(call, CollectiveAlgorithm::ring, CollectiveFidelity::exact, p2p, {}), std::invalid_argument);
  call.me = 0;
  call.bytes = -1;
  EXPECT_THROW(run_collective(call, CollectiveAlgorithm::ring, CollectiveFidelity::exact, p2p, {}), std::invalid_argument);
}

}  // namespace
}  // namespace tandem::sim::collectives
