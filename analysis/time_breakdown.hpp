// Where each rank's time went in one iteration, from its trace records: busy computing, in
// communication that no computation hides (exposed), or idle, so that the three add up to the
// iteration (from the earliest start to the latest end over all ranks). Communication that runs
// while the rank computes is counted as compute (it costs nothing); comm_busy_s is the whole
// time any communication stream was busy.
#pragma once

#include <map>
#include <vector>

#include "analysis/trace.hpp"

namespace tandem {

struct RankTimeBreakdown {
  Seconds compute_s = 0;
  Seconds exposed_comm_s = 0;
  Seconds idle_s = 0;
  Seconds comm_busy_s = 0;
};

// `records`: one iteration of every rank.
std::map<int, RankTimeBreakdown> time_breakdown(const std::vector<TraceRecord>& records);

}  // namespace tandem
