// The cost objective over node selections (search_space.hpp: `nodes`): when every plan takes the
// same time per token, the cheapest devices win; and a selection's candidates use exactly its
// devices.
#include <gtest/gtest.h>

#include "platforms/cluster_selection.hpp"
#include "strategies/search/search.hpp"

namespace tandem::search {
namespace {

// Every plan takes one second per iteration (the batch is fixed: equal time per token); its price
// is that of the devices it uses.
class FlatEvaluator final : public Evaluator {
 public:
  explicit FlatEvaluator(const Cluster& cluster) : cluster_(cluster) {}
  std::vector<Estimate> estimate(const std::vector<Candidate>& candidates) override {
    std::vector<Estimate> out;
    for (const Candidate& c : candidates) {
      Estimate e;
      e.valid = true;
      e.iteration_time_s = 0.5;
      e.usd_per_s = price_of(c);
      out.push_back(e);
    }
    return out;
  }
  std::vector<Evaluation> evaluate(const std::vector<Candidate>& candidates) override {
    std::vector<Evaluation> out;
    for (const Candidate& c : candidates) {
      Evaluation e;
      e.ok = true;
      e.iteration_time_s = 1.0;
      e.usd_per_s = price_of(c);
      out.push_back(e);
    }
    return out;
  }

 private:
  double price_of(const Candidate& c) const {
    const Cluster part = select_nodes(cluster_, c.nodes);
    return usd_per_s(part, part.device_count());
  }
  const Cluster& cluster_;
};

Enumeration node_space(const Cluster& cluster, const TrainingConfig& training) {
  SearchSpace space;
  space.nodes = node_selections(cluster, {});
  space.tp = {8};
  space.pp = {1};
  space.micro_batch_size = {1};
  space.zero_stage = {0};
  space.recompute = {Recompute::none};
  return enumerate(complete_space(space, cluster, training), cluster, training);
}

TEST(CostObjective, NodeSelectionsCoverEveryCountOfEveryGroup) {
  const Cluster mixed = find_cluster("mixed");  // 8 nodes in each of 3 groups
  EXPECT_EQ(default_node_counts(8), (std::vector<int>{0, 1, 2, 4, 8}));
  EXPECT_EQ(default_node_counts(6), (std::vector<int>{0, 1, 2, 4, 6}));
  EXPECT_EQ(node_selections(mixed, {}).size(), 5u * 5u * 5u - 1u);
  EXPECT_EQ(node_selections(mixed, {{1}, {0, 2}, {0}}), (std::vector<std::vector<int>>{{1, 0, 0}, {1, 2, 0}}));
  TrainingConfig training;
  training.global_batch_size = 1024;
  const Enumeration e = node_space(mixed, training);
  ASSERT_FALSE(e.candidates.empty());
  for (const Candidate& c : e.candidates) {
    ASSERT_EQ(c.nodes.size(), 3u);
    EXPECT_EQ(c.world_size(), selected_devices(mixed, c.nodes)) << c.key();
  }
}

TEST(CostObjective, EqualTimePerTokenMeansTheCheapestDevicesWin) {
  const Cluster mixed = find_cluster("mixed");
  TrainingConfig training;
  training.global_batch_size = 1024;
  const Enumeration e = node_space(mixed, training);
  SearchSettings settings;
  settings.algorithm = Algorithm::exhaustive;
  settings.top_k = 3;
  settings.objective = Objective::cost;
  FlatEvaluator cost_evaluator(mixed);
  const SearchResult cost = run_search(e, cost_evaluator, settings);
  ASSERT_FALSE(cost.ranked.empty());
  // One V100 node is the cheapest hour of the cluster (platforms/devices: price_per_hour_usd).
  EXPECT_EQ(cost.ranked.front().candidate.nodes, (std::vector<int>{0, 0, 1}));
  for (std::size_t i = 1; i < cost.ranked.size(); ++i)
    EXPECT_LE(cost.ranked[i - 1].evaluation.usd_per_s, cost.ranked[i].evaluation.usd_per_s);
  EXPECT_GT(cost.pruned_by_bound, 0) << "the price bounds the cost before simulating";
}

}  // namespace
}  // namespace tandem::search
