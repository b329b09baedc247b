#include "analysis/time_breakdown.hpp"

#include <algorithm>

namespace tandem {

namespace {

using Intervals = std::vector<std::pair<Seconds, Seconds>>;

// Sorted, disjoint intervals covering the same time as `in`.
Intervals merged(Intervals in) {
  std::sort(in.begin(), in.end());
  Intervals out;
  for (const auto& [start, end] : in) {
    if (!out.empty() && start <= out.back().second) out.back().second = std::max(out.back().second, end);
    else out.push_back({start, end});
  }
  return out;
}

Seconds length(const Intervals& disjoint) {
  Seconds total = 0;
  for (const auto& [start, end] : disjoint) total += end - start;
  return total;
}

// Length of the intersection of two sorted disjoint interval lists.
Seconds overlap(const Intervals& a, const Intervals& b) {
  Seconds total = 0;
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    total += std::max(0.0, std::min(a[i].second, b[j].second) - std::max(a[i].first, b[j].first));
    (a[i].second < b[j].second) ? ++i : ++j;
  }
  return total;
}

}  // namespace

std::map<int, RankTimeBreakdown> time_breakdown(const std::vector<TraceRecord>& records) {
  if (records.empty()) return {};
  Seconds start_s = records[0].start_s, end_s = records[0].end_s;
  std::map<int, std::pair<Intervals, Intervals>> busy;  // rank → (compute, comm)
  for (const auto& r : records) {
    start_s = std::min(start_s, r.start_s), end_s = std::max(end_s, r.end_s);
    auto& [compute, comm] = busy[r.rank];
    (is_communication(r.kind) ? comm : compute).push_back({r.start_s, r.end_s});
  }
  std::map<int, RankTimeBreakdown> out;
  for (auto& [rank, lanes] : busy) {
    const Intervals compute = merged(std::move(lanes.first));
    const Intervals comm = merged(std::move(lanes.second));
    RankTimeBreakdown b;
    b.compute_s = length(compute);
    b.comm_busy_s = length(comm);
    b.exposed_comm_s = b.comm_busy_s - overlap(compute, comm);
    b.idle_s = std::max(0.0, (end_s - start_s) - b.compute_s - b.exposed_comm_s);
    out[rank] = b;
  }
  return out;
}

}  // namespace tandem
