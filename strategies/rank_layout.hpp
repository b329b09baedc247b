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
  int cp = 0;  // context-parallel index (0 without context parallelism)
};

// Context parallelism (cp > 1) comes right after tensor parallelism in either order, as in
// Megatron-Core's "tp-cp-ep-dp-pp": a context-parallel group talks at every layer.
class RankLayout {
 public:
  RankLayout(int tp, int dp, int pp, RankOrder order, int cp = 1);

  int world_size() const { return tp_ * cp_ * dp_ * pp_; }
  int tp_size() const { return tp_; }
  int dp_size() const { return dp_; }
  int pp_size() const { return pp_; }
  int cp_size() const { return cp_; }

  int rank_of(RankCoord c) const;
  RankCoord coord_of(int rank) const;

  // Group ids are unique across kinds, and the same on every member.
  Group tensor_group(int rank) const;    // same dp, pp, cp
  Group data_group(int rank) const;      // same tp, pp, cp: the replicas
  Group context_group(int rank) const;   // same tp, dp, pp
  // Same tp, pp: the ranks that sum gradients (Megatron's data-parallel group with context
  // parallelism; each context-parallel rank computed them on its part of the sequence). The data
  // group itself when cp == 1.
  Group data_context_group(int rank) const;
  // The data group's block of `block_size` consecutive replicas that holds `rank` (hierarchical
  // local SGD's synchronous block); block_size divides dp.
  Group data_block_group(int rank, int block_size) const;
  // Expert parallelism (Megatron-Core's expert_model_parallel_size, ep divides dp): the block of
  // ep consecutive replicas holding `rank` (at its context-parallel index), which exchange tokens
  // (all-to-all) at every mixture-of-experts layer, each holding its share of the experts; and the
  // ranks at `rank`'s place in every block, at every context-parallel index, which hold the same
  // experts and sum their gradients (each computed them on its part of the sequences).
  Group expert_group(int rank, int ep) const;
  Group expert_data_group(int rank, int ep) const;
  Group pipeline_group(int rank) const;  // same tp, dp, cp; stage order
  // First and last pipeline stage of this rank's pipeline (tied embeddings).
  Group embedding_group(int rank) const;

 private:
  int tp_, dp_, pp_, cp_;
  RankOrder order_;
};

}  // namespace tandem
