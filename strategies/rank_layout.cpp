#include "strategies/rank_layout.hpp"

#include <stdexcept>

namespace tandem {

namespace {
// Group id bases: one range per kind of group.
constexpr int kTensorGroups = 1'000'000;
constexpr int kDataGroups = 2'000'000;
constexpr int kPipelineGroups = 3'000'000;
constexpr int kEmbeddingGroups = 4'000'000;
}  // namespace

const char* to_string(RankOrder order) { return order == RankOrder::tp_dp_pp ? "tp-dp-pp" : "tp-pp-dp"; }

RankOrder parse_rank_order(const std::string& text) {
  if (text == "tp-dp-pp") return RankOrder::tp_dp_pp;
  if (text == "tp-pp-dp") return RankOrder::tp_pp_dp;
  throw std::invalid_argument("unknown rank order '" + text + "' (expected tp-dp-pp or tp-pp-dp)");
}

RankLayout::RankLayout(int tp, int dp, int pp, RankOrder order) : tp_(tp), dp_(dp), pp_(pp), order_(order) {
  if (tp < 1 || dp < 1 || pp < 1) throw std::invalid_argument("parallel sizes must be at least 1");
}

int RankLayout::rank_of(RankCoord c) const {
  if (order_ == RankOrder::tp_dp_pp) return c.tp + tp_ * (c.dp + dp_ * c.pp);
  return c.tp + tp_ * (c.pp + pp_ * c.dp);
}

RankCoord RankLayout::coord_of(int rank) const {
  RankCoord c;
  c.tp = rank % tp_;
  const int rest = rank / tp_;
  if (order_ == RankOrder::tp_dp_pp) {
    c.dp = rest % dp_;
    c.pp = rest / dp_;
  } else {
    c.pp = rest % pp_;
    c.dp = rest / pp_;
  }
  return c;
}

Group RankLayout::tensor_group(int rank) const {
  const RankCoord me = coord_of(rank);
  Group g;
  g.id = kTensorGroups + me.dp + dp_ * me.pp;
  for (int t = 0; t < tp_; ++t) g.ranks.push_back(rank_of({t, me.dp, me.pp}));
  return g;
}

Group RankLayout::data_group(int rank) const {
  const RankCoord me = coord_of(rank);
  Group g;
  g.id = kDataGroups + me.tp + tp_ * me.pp;
  for (int d = 0; d < dp_; ++d) g.ranks.push_back(rank_of({me.tp, d, me.pp}));
  return g;
}

Group RankLayout::pipeline_group(int rank) const {
  const RankCoord me = coord_of(rank);
  Group g;
  g.id = kPipelineGroups + me.tp + tp_ * me.dp;
  for (int s = 0; s < pp_; ++s) g.ranks.push_back(rank_of({me.tp, me.dp, s}));
  return g;
}

Group RankLayout::embedding_group(int rank) const {
  const RankCoord me = coord_of(rank);
  Group g;
  g.id = kEmbeddingGroups + me.tp + tp_ * me.dp;
  g.ranks = {rank_of({me.tp, me.dp, 0}), rank_of({me.tp, me.dp, pp_ - 1})};
  return g;
}

}  // namespace tandem
