// Where each rank of a trace ran (device, node group, node), for the timelines' process names, and
// the ranks a trace keeps (`--trace-ranks`: one rank per device group is often all a timeline needs).
#pragma once

#include <string>
#include <vector>

#include "analysis/trace.hpp"
#include "platforms/cluster.hpp"
#include "strategies/strategy.hpp"

namespace tandem {

// Ranks 0..world-1 of `cluster`, as Trace::ranks holds them, with their roles in the plan when
// the strategy gives them (one per rank, Strategy::rank_roles; empty: unknown).
std::vector<TraceRank> trace_ranks(const Cluster& cluster, int world, const std::vector<RankRole>& roles = {});

// "0-7,32,40-47": the ranks of a list of ranks and inclusive ranges, each below `world`, as a
// mask by rank; std::invalid_argument naming what is wrong otherwise.
std::vector<bool> parse_rank_list(const std::string& text, int world);

// Drops the records of ranks not in `keep` (Trace::ranks stays whole: it is indexed by rank).
void keep_ranks(Trace& trace, const std::vector<bool>& keep);

}  // namespace tandem
