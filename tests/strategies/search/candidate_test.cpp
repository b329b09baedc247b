// Candidates: every knob survives the JSON that carries a candidate to MPI workers and reports,
// and keys tell candidates apart.
#include <gtest/gtest.h>

#include <set>

#include "platforms/cluster.hpp"
#include "strategies/search/search_space.hpp"

namespace tandem::search {
namespace {

TEST(Candidate, EveryCandidateRoundTripsThroughJson) {
  const Cluster cluster = find_cluster("mixed");
  TrainingConfig training;
  training.global_batch_size = 96;
  SearchSpace space;
  space.schedule = {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b, PipelineSchedule::interleaved_1f1b};
  space.sequence_parallel = {0, 1};
  space.order = {RankOrder::tp_dp_pp, RankOrder::tp_pp_dp};
  const Enumeration e = enumerate(complete_space(space, cluster, training), cluster, training);
  ASSERT_GT(e.candidates.size(), 1000u);
  std::set<std::string> keys;
  for (const Candidate& c : e.candidates) {
    EXPECT_EQ(candidate_from_json(nlohmann::json::parse(to_json(c).dump())), c) << c.key();
    keys.insert(c.key());
  }
  EXPECT_EQ(keys.size(), e.candidates.size()) << "two candidates share a key";
}

TEST(Candidate, ExplicitLayersTravelInJsonAndTellCandidatesApart) {
  Candidate a;
  a.tp = 8, a.pp = 3, a.dp = 8;
  a.layers_per_stage = {20, 12, 8};
  Candidate b = a;
  b.layers_per_stage = {19, 13, 8};
  EXPECT_EQ(candidate_from_json(nlohmann::json::parse(to_json(a).dump())), a);
  EXPECT_NE(a.key(), b.key());
  EXPECT_NE(a.key().find("stages=20/12/8"), std::string::npos) << a.key();
  EXPECT_TRUE(a.heterogeneity_aware());
}

}  // namespace
}  // namespace tandem::search
