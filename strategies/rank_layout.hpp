// Where each rank sits in a data x tensor x pipeline parallel grid, and the communication groups
// that follow. Megatron-LM's convention: the order names the coordinates from fastest- to
// slowest-varying; the default "tp-dp-pp" keeps a tensor-parallel group on consecutive ranks
// (inside a node) and spreads pipeline stages farthest apart (across nodes). "tp-pp-dp" puts a
// whole pipeline on consecutive ranks instead.
#pragma once

#include <string>
#include <vector>

#include "strategies/op.hpp"

namespace tandem {

enum class RankOrder { tp_dp_pp, tp_pp_dp };
const char* to_string(RankOrder order);
RankOrder parse_rank_order(const std::string& text);  // "tp-dp-pp", "tp-pp-dp"

struct RankCoord {
  int tp = 0, dp = 0, pp = 0;
};

class RankLayout {
 public:
  RankLayout(int tp, int dp, int pp, RankOrder order);

  int world_size() const { return tp_ * dp_ * pp_; }
  int tp_size() const { return tp_; }
  int dp_size() const { return dp_; }
  int pp_size() const { return pp_; }

  int rank_of(RankCoord c) const;
  RankCoord coord_of(int rank) const;

  // Group ids are unique across kinds, and the same on every member.
  Group tensor_group(int rank) const;    // same dp, pp
  Group data_group(int rank) const;      // same tp, pp
  Group pipeline_group(int rank) const;  // same tp, dp; stage order
  // First and last pipeline stage of this rank's pipeline (tied embeddings).
  Group embedding_group(int rank) const;

 private:
  int tp_, dp_, pp_;
  RankOrder order_;
};

}  // namespace tandem
