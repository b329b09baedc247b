// The search space: defaults suit the cluster, impossible combinations are dropped with their
// reason counted, meaningless variations are not multiplied out, the order is canonical.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "platforms/cluster.hpp"
#include "strategies/search/search_space.hpp"

namespace tandem::search {
namespace {

TrainingConfig batch_of(std::int64_t global) {
  TrainingConfig t;
  t.global_batch_size = global;
  return t;
}

TEST(SearchSpace, EveryCandidateUsesTheDevicesAndSplitsTheBatch) {
  const Cluster cluster = find_cluster("tiny-h100");
  const TrainingConfig training = batch_of(16);
  const Enumeration e = enumerate(complete_space({}, cluster, training), cluster, training);
  ASSERT_FALSE(e.candidates.empty());
  for (const Candidate& c : e.candidates) {
    EXPECT_EQ(c.world_size(), 8) << c.key();
    EXPECT_LE(c.tp, 4) << "a tensor group never leaves a 4-GPU node";
    EXPECT_EQ(16 % (c.micro_batch_size * c.dp), 0) << c.key();
    if (c.pp == 1) EXPECT_EQ(c.schedule, PipelineSchedule::one_f_one_b);
    if (c.dp == 1) EXPECT_EQ(c.zero_stage, 0) << "ZeRO without data parallelism is not a variation";
    EXPECT_FALSE(c.heterogeneity_aware()) << "one device kind: no heterogeneity-aware variants";
  }
  EXPECT_TRUE(std::is_sorted(e.candidates.begin(), e.candidates.end()));
  EXPECT_EQ(static_cast<std::int64_t>(e.candidates.size()) +
                [&] { std::int64_t n = 0; for (auto& [r, c] : e.dropped) n += c; return n; }(),
            e.combinations);
}

// On alike devices a proportional batch split is the even one wherever the micro-batches divide
// over the replicas: it is enumerated only where they do not (6 replicas of 16 micro-batches: some
// take 3, some 2), which even splitting drops.
TEST(SearchSpace, AProportionalSplitOfAlikeDevicesIsEnumeratedOnlyWhereTheBatchDoesNotDivide) {
  const Cluster cluster = find_cluster("tiny-h100");
  const TrainingConfig training = batch_of(16);
  SearchSpace s;
  s.devices = {6, 8};
  s.micro_batch_size = {1};
  s.recompute = {Recompute::none};
  s.zero_stage = {0};
  s.batch_split = {BatchSplit::even, BatchSplit::proportional};
  const Enumeration e = enumerate(complete_space(s, cluster, training), cluster, training);
  bool six_replicas = false;
  for (const Candidate& c : e.candidates) {
    if (c.dp < 2) continue;
    const bool divides = 16 % c.dp == 0;
    EXPECT_EQ(c.batch_split, divides ? BatchSplit::even : BatchSplit::proportional) << c.key();
    six_replicas |= c.dp == 6;
  }
  EXPECT_TRUE(six_replicas) << "tp=1 dp=6 on 6 devices: only a proportional split runs it";
}

// Plans with these numbers of servers (and staleness 0 or 1), one micro-batch size, no recompute.
SearchSpace server_space(std::vector<int> servers) {
  SearchSpace s;
  s.micro_batch_size = {1};
  s.recompute = {Recompute::none};
  s.parameter_servers = std::move(servers);
  s.parameter_server_staleness = {0, 1};
  return s;
}

TEST(SearchSpace, ParameterServersTakeDevicesFromTheWorkersOfDataParallelPlans) {
  const Cluster cluster = find_cluster("tiny-h100");  // 8 devices
  const TrainingConfig training = batch_of(12);
  const SearchSpace s = server_space({0, 2, 8});
  const Enumeration e = enumerate(complete_space(s, cluster, training), cluster, training);
  std::set<int> stalenesses;
  int with_servers = 0;
  for (const Candidate& c : e.candidates) {
    EXPECT_EQ(c.world_size(), 8) << c.key();
    if (c.parameter_servers == 0) {
      EXPECT_EQ(c.parameter_server_staleness, 0) << "staleness without servers is no variation: " << c.key();
      continue;
    }
    ++with_servers;
    // 6 workers and 2 servers, data parallelism alone.
    EXPECT_EQ(c.parameter_servers, 2) << c.key();
    EXPECT_EQ(c.dp, 6);
    EXPECT_EQ(c.tp * c.pp * c.cp, 1);
    EXPECT_EQ(c.zero_stage, 0);
    EXPECT_NE(c.key().find("servers=2"), std::string::npos) << c.key();
    stalenesses.insert(c.parameter_server_staleness);
  }
  EXPECT_EQ(with_servers, 2);
  EXPECT_EQ(stalenesses, (std::set<int>{0, 1}));
  EXPECT_GT(e.dropped.at("parameter servers leave no worker"), 0);
}

TEST(SearchSpace, AsynchronousServersArePlansOfTheirOwnWithoutABound) {
  const Cluster cluster = find_cluster("tiny-h100");  // 8 devices
  const TrainingConfig training = batch_of(12);
  SearchSpace s = server_space({2});
  s.parameter_server_asynchronous = {0, 1};
  const Enumeration e = enumerate(complete_space(s, cluster, training), cluster, training);
  int asynchronous = 0;
  for (const Candidate& c : e.candidates) {
    if (!c.parameter_server_asynchronous) continue;
    ++asynchronous;
    EXPECT_EQ(c.parameter_server_staleness, 0) << c.key();
    EXPECT_NE(c.key().find(" async"), std::string::npos) << c.key();
    EXPECT_TRUE(candidate_from_json(to_json(c)).parameter_server_asynchronous);
  }
  EXPECT_EQ(asynchronous, 1);
  EXPECT_EQ(e.dropped.at("asynchronous servers bound no staleness"), 1);
}

TEST(SearchSpace, ImpossibleSizesAreDroppedWithTheirReason) {
  const Cluster cluster = find_cluster("tiny-h100");
  const TrainingConfig training = batch_of(6);
  SearchSpace s;
  s.tp = {8};  // larger than a 4-GPU node
  Enumeration e = enumerate(complete_space(s, cluster, training), cluster, training);
  EXPECT_TRUE(e.candidates.empty());
  EXPECT_GT(e.dropped.at("tensor group larger than a node"), 0);

  s.tp = {1};
  s.pp = {3};  // 8 devices
  e = enumerate(complete_space(s, cluster, training), cluster, training);
  EXPECT_GT(e.dropped.at("tp x pp does not divide the device count"), 0);

  s.pp = {1};  // dp = 8 replicas for a batch of 6
  e = enumerate(complete_space(s, cluster, training), cluster, training);
  EXPECT_GT(e.dropped.at("fewer micro-batches than data-parallel replicas"), 0);
}

TEST(SearchSpace, MixedClustersAddHeterogeneityAwareVariants) {
  const Cluster cluster = find_cluster("mixed");
  const TrainingConfig training = batch_of(96);
  SearchSpace s;
  s.tp = {8};
  s.pp = {3};
  s.micro_batch_size = {1};
  s.recompute = {Recompute::none};
  s.zero_stage = {1};
  const Enumeration e = enumerate(complete_space(s, cluster, training), cluster, training);
  EXPECT_EQ(e.candidates.size(), 4u);  // stages uniform/proportional x batch even/proportional
  EXPECT_EQ(std::count_if(e.candidates.begin(), e.candidates.end(),
                          [](const Candidate& c) { return c.heterogeneity_aware(); }),
            3);
}

TEST(SearchSpace, FewerDevicesUseTheFirstNodeGroups) {
  // On the mixed cluster, 128 devices are the H100 and A100 nodes: the V100s left out.
  const Cluster cluster = find_cluster("mixed");
  const TrainingConfig training = batch_of(64);
  SearchSpace s;
  s.devices = {128, 192};
  s.tp = {8};
  s.micro_batch_size = {1};
  s.recompute = {Recompute::none};
  const Enumeration e = enumerate(complete_space(s, cluster, training), cluster, training);
  std::set<int> worlds;
  for (const Candidate& c : e.candidates) worlds.insert(c.world_size());
  EXPECT_EQ(worlds, (std::set<int>{128, 192}));
  EXPECT_TRUE(heterogeneous_prefix(cluster, 128));
  EXPECT_FALSE(heterogeneous_prefix(cluster, 64));
}

TEST(SearchSpace, PinnedKnobsStayPinned) {
  const Cluster cluster = find_cluster("tiny-h100");
  const TrainingConfig training = batch_of(16);
  SearchSpace s;
  s.tp = {2};
  s.zero_stage = {1};
  s.recompute = {Recompute::selective};
  for (const Candidate& c : enumerate(complete_space(s, cluster, training), cluster, training).candidates) {
    EXPECT_EQ(c.tp, 2);
    EXPECT_EQ(c.recompute, Recompute::selective);
    if (c.dp > 1) EXPECT_EQ(c.zero_stage, 1);
  }
}

}  // namespace
}  // namespace tandem::search
