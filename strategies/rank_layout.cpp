#include "strategies/rank_layout.hpp"

#include <stdexcept>

namespace tandem {

namespace {
// Group id bases: one range per kind of group.
constexpr int kTensorGroups = 1'000'000;
constexpr int kDataGroups = 2'000'000;
constexpr int kPipelineGroups = 3'000'000;
constexpr int kEmbeddingGroups = 4'000'000;
constexpr int kContextGroups = 5'000'000;
constexpr int kDataContextGroups = 6'000'000;
constexpr int kDataBlockGroups = 7'000'000;
constexpr int kExpertGroups = 8'000'000;
constexpr int kExpertDataGroups = 9'000'000;
}  // namespace

const char* to_string(RankOrder order) { return order == RankOrder::tp_dp_pp ? "tp-dp-pp" : "tp-pp-dp"; }

RankOrder parse_rank_order(const std::string& text) {
  if (text == "tp-dp-pp") return RankOrder::tp_dp_pp;
  if (text == "tp-pp-dp") return RankOrder::tp_pp_dp;
  throw std::invalid_argument("unknown rank order '" + text + "' (expected tp-dp-pp or tp-pp-dp)");
}

RankLayout::RankLayout(int tp, int dp, int pp, RankOrder order, int cp)
    : tp_(tp), dp_(dp), pp_(pp), cp_(cp), order_(order) {
  if (tp < 1 || dp < 1 || pp < 1 || cp < 1) throw std::invalid_argument("parallel sizes must be at least 1");
}

int RankLayout::rank_of(RankCoord c) const {
  const int rest = order_ == RankOrder::tp_dp_pp ? c.dp + dp_ * c.pp : c.pp + pp_ * c.dp;
  return c.tp + tp_ * (c.cp + cp_ * rest);
}

RankCoord RankLayout::coord_of(int rank) const {
  RankCoord c;
  c.tp = rank % tp_;
  c.cp = (rank / tp_) % cp_;
  const int rest = rank / tp_ / cp_;
  if (order_ == RankOrder::tp_dp_pp) {
    c.dp = rest % dp_;
    c.pp = rest / dp_;
  } else {
    c.pp = rest % pp_;
    c.dp = rest / pp_;
  }
  return c;
}

// Group ids: the coordinates the group's members share, numbered (the same ids as without
// context parallelism when cp == 1).
Group RankLayout::tensor_group(int rank) const {
  const RankCoord me = coord_of(rank);
  Group g;
  g.id = kTensorGroups + me.dp + dp_ * (me.pp + pp_ * me.cp);
  for (int t = 0; t < tp_; ++t) g.ranks.push_back(rank_of({t, me.dp, me.pp, me.cp}));
  return g;
}

Group RankLayout::data_group(int rank) const {
  const RankCoord me = coord_of(rank);
  Group g;
  g.id = kDataGroups + me.tp + tp_ * (me.pp + pp_ * me.cp);
  for (int d = 0; d < dp_; ++d) g.ranks.push_back(rank_of({me.tp, d, me.pp, me.cp}));
  return g;
}

Group RankLayout::data_block_group(int rank, int block_size) const {
  const RankCoord me = coord_of(rank);
  const int first = me.dp / block_size * block_size;
  Group g;
  g.id = kDataBlockGroups + me.tp + tp_ * (me.pp + pp_ * (me.cp + cp_ * (me.dp / block_size)));
  for (int d = first; d < first + block_size; ++d) g.ranks.push_back(rank_of({me.tp, d, me.pp, me.cp}));
  return g;
}

Group RankLayout::expert_group(int rank, int ep) const {
  Group g = data_block_group(rank, ep);
  g.id += kExpertGroups - kDataBlockGroups;
  return g;
}

Group RankLayout::expert_data_group(int rank, int ep) const {
  const RankCoord me = coord_of(rank);
  Group g;
  g.id = kExpertDataGroups + me.tp + tp_ * (me.pp + pp_ * (me.dp % ep));
  for (int d = me.dp % ep; d < dp_; d += ep)
    for (int c = 0; c < cp_; ++c) g.ranks.push_back(rank_of({me.tp, d, me.pp, c}));
  return g;
}

Group RankLayout::context_group(int rank) const {
  const RankCoord me = coord_of(rank);
  Group g;
  g.id = kContextGroups + me.tp + tp_ * (me.dp + dp_ * me.pp);
  for (int c = 0; c < cp_; ++c) g.ranks.push_back(rank_of({me.tp, me.dp, me.pp, c}));
  return g;
}

Group RankLayout::data_context_group(int rank) const {
  if (cp_ == 1) return data_group(rank);
  const RankCoord me = coord_of(rank);
  Group g;
  g.id = kDataContextGroups + me.tp + tp_ * me.pp;
  for (int d = 0; d < dp_; ++d)
    for (int c = 0; c < cp_; ++c) g.ranks.push_back(rank_of({me.tp, d, me.pp, c}));
  return g;
}

Group RankLayout::pipeline_group(int rank) const {
  const RankCoord me = coord_of(rank);
  Group g;
  g.id = kPipelineGroups + me.tp + tp_ * (me.dp + dp_ * me.cp);
  for (int s = 0; s < pp_; ++s) g.ranks.push_back(rank_of({me.tp, me.dp, s, me.cp}));
  return g;
}

Group RankLayout::embedding_group(int rank) const {
  const RankCoord me = coord_of(rank);
  Group g;
  g.id = kEmbeddingGroups + me.tp + tp_ * (me.dp + dp_ * me.cp);
  g.ranks = {rank_of({me.tp, me.dp, 0, me.cp}), rank_of({me.tp, me.dp, pp_ - 1, me.cp})};
  return g;
}

}  // namespace tandem
