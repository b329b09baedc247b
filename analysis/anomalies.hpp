// Anomalies in a (measured) trace: ranks whose compute is slower than their peers' beyond the
// noise (stragglers: a throttled GPU, a busy core), and ops whose time on one rank stands out
// from the same op on its peers.
//
// Peers are ranks that should do the same work: the same device and pipeline stage (the trace's
// ranks, TraceRank), or every rank when the trace does not say. Only the compute stream counts:
// a straggler makes its peers wait in their collectives, so communication time would point at
// the wrong ranks. A rank or op is flagged when it is slower than its peers' median by more than
// both a floor (5% for ranks, 50% and 20 us for ops) and 4 times the peers' median absolute
// deviation (the noise); groups of fewer than 3 peers cannot tell who is slow and are skipped.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "analysis/trace.hpp"

namespace tandem {

struct RankAnomaly {
  int rank = 0;
  Seconds compute_s = 0;       // per iteration
  Seconds peers_median_s = 0;  // the median of its peer group (itself included)
  int peers = 0;
  double slower() const { return peers_median_s > 0 ? compute_s / peers_median_s - 1 : 0; }
};

struct OpAnomaly {
  int rank = 0;
  std::string op_id;
  OpKind kind = OpKind::gemm;
  Seconds duration_s = 0;      // mean over the iterations it ran in
  Seconds peers_median_s = 0;  // the same op on its peers
  double slower() const { return peers_median_s > 0 ? duration_s / peers_median_s - 1 : 0; }
};

struct Anomalies {
  std::vector<RankAnomaly> ranks;  // slowest first
  std::vector<OpAnomaly> ops;      // by excess time (duration - median), largest first; at most 10
  int ranks_checked = 0;           // ranks in peer groups of 3 or more
};

Anomalies find_anomalies(const Trace& trace);

nlohmann::json to_json(const Anomalies& anomalies);
// "straggler: rank 5 computes ... +31.2% over the median of the 8 ranks of its device and stage"
// lines, "slow op: ..." lines, or one line saying
// none stands out; `indent` starts each line.
std::string to_text(const Anomalies& anomalies, const std::string& indent = "  ");

}  // namespace tandem
