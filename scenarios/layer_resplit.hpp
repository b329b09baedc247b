// What re-splitting a pipeline's layers costs: when a straggler is re-balanced
// (reliability.rebalance_after), stages give layers to their neighbours, and each moved layer's
// state (its weights and optimizer state, as the rank holds them) crosses the network before
// training goes on. Batch shares move nothing (every replica holds the whole model), so a plan
// without a pipeline re-splits for free.
//
// Layers cross each boundary between stage k and k + 1 as the stages' cumulative layer counts
// differ before and after; each replica's boundaries move at once, each tensor rank its own
// shard, over the path between the two stages' devices. The slowest boundary sets the time.
// Per layer and rank: the block's parameters / tensor size x (weight bytes + optimizer bytes),
// optimizer bytes 12 per parameter in 16-bit training (fp32 master, m, v) or 8 in fp32 (m, v),
// divided over the replicas with ZeRO >= 1 (and the weights too with ZeRO 3). Experts count
// whole (an overestimate under expert parallelism).
#pragma once

#include "scenarios/scenario.hpp"

namespace tandem {

// Bytes of one transformer layer's state on one rank of the scenario's plan (0 for an MLP model).
Bytes layer_state_bytes_per_rank(const Scenario& scenario);

// Seconds to move from `from`'s layer split to `to`'s (same layout, other layers per stage).
Seconds layer_resplit_s(const Strategy& from, const Strategy& to, const Cluster& cluster, Bytes layer_bytes_per_rank);

}  // namespace tandem
