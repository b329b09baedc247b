#include "analysis/critical_path.hpp"

#include <algorithm>
#include <set>
#include <tuple>

namespace tandem {

const char* to_string(PathLink link) {
  switch (link) {
    case PathLink::first: return "first";
    case PathLink::stream_order: return "stream_order";
    case PathLink::cross_stream: return "cross_stream";
    case PathLink::rendezvous: return "rendezvous";
  }
  return "?";
}

namespace {

// Two instants closer than this are the same instant (timestamps are printed in ns at best).
constexpr Seconds kSameInstantS = 1e-9;

// Lookup tables over one iteration's records (indices into `records`).
class PathIndex {
 public:
  explicit PathIndex(const std::vector<TraceRecord>& records) : records_(records) {
    const int n = static_cast<int>(records.size());
    for (int i = 0; i < n; ++i) {
      const auto& r = records[i];
      by_start_[{r.rank, static_cast<int>(r.stream)}].push_back(i);
      by_end_[{r.rank, static_cast<int>(r.stream)}].push_back(i);
    }
    position_.assign(n, 0);
    for (auto& [lane, ids] : by_start_) {
      std::stable_sort(ids.begin(), ids.end(), [&](int a, int b) { return start(a) < start(b); });
      for (std::size_t p = 0; p < ids.size(); ++p) position_[ids[p]] = static_cast<int>(p);
    }
    for (auto& [lane, ids] : by_end_)
      std::stable_sort(ids.begin(), ids.end(), [&](int a, int b) { return end(a) < end(b); });
    index_rendezvous();
  }

  // The instance of X's rendezvous (itself included) that started last.
  int last_arrival(int x) const {
    int latest = x;
    for (int p : partners_[x])
      if (start(p) > start(latest) + kSameInstantS) latest = p;
    return latest;
  }

  // The op that released X, and how; {-1, first} when nothing did.
  std::pair<int, PathLink> predecessor(int x) const {
    const auto& r = records_[x];
    const std::pair<int, int> own_lane{r.rank, static_cast<int>(r.stream)};
    int best = -1;
    PathLink link = PathLink::first;
    const int pos = position_[x];
    if (pos > 0) best = by_start_.at(own_lane)[pos - 1], link = PathLink::stream_order;
    for (const auto& [lane, ids] : by_end_) {
      if (lane.first != r.rank || lane == own_lane) continue;
      // The last op on that lane ending by X's start.
      auto it = std::upper_bound(ids.begin(), ids.end(), start(x) + kSameInstantS,
                                 [&](Seconds t, int id) { return t < end(id); });
      if (it == ids.begin()) continue;
      const int candidate = *std::prev(it);
      if (best < 0 || end(candidate) > end(best) + kSameInstantS)
        best = candidate, link = PathLink::cross_stream;
    }
    return {best, link};
  }

  Seconds start(int i) const { return records_[i].start_s; }
  Seconds end(int i) const { return records_[i].end_s; }

 private:
  void index_rendezvous() {
    partners_.assign(records_.size(), {});
    std::map<std::tuple<std::string, int, int>, std::vector<int>> collectives;  // op id, group, kind
    std::map<std::pair<int, int>, std::vector<int>> sends, recvs;               // (from, to)
    for (int i = 0; i < static_cast<int>(records_.size()); ++i) {
      const auto& r = records_[i];
      if (is_collective(r.kind))
        collectives[{r.op_id, r.group_id, static_cast<int>(r.kind)}].push_back(i);
      else if (r.kind == OpKind::send && r.peer >= 0)
        sends[{r.rank, r.peer}].push_back(i);
      else if (r.kind == OpKind::recv && r.peer >= 0)
        recvs[{r.peer, r.rank}].push_back(i);
    }
    for (const auto& [key, members] : collectives)
      for (int m : members) partners_[m] = members;
    // Point-to-point messages between two ranks arrive in the order they were sent.
    for (auto& [pair, send_ids] : sends) {
      auto found = recvs.find(pair);
      if (found == recvs.end()) continue;
      auto& recv_ids = found->second;
      auto by_start = [&](int a, int b) { return start(a) < start(b); };
      std::stable_sort(send_ids.begin(), send_ids.end(), by_start);
      std::stable_sort(recv_ids.begin(), recv_ids.end(), by_start);
      for (std::size_t k = 0; k < std::min(send_ids.size(), recv_ids.size()); ++k)
        partners_[send_ids[k]] = partners_[recv_ids[k]] = {send_ids[k], recv_ids[k]};
    }
  }

  const std::vector<TraceRecord>& records_;
  std::map<std::pair<int, int>, std::vector<int>> by_start_, by_end_;  // (rank, stream) lanes
  std::vector<int> position_;                                          // in its lane, by start
  std::vector<std::vector<int>> partners_;
};

}  // namespace

CriticalPath critical_path(const std::vector<TraceRecord>& records) {
  CriticalPath path;
  if (records.empty()) return path;
  const PathIndex index(records);
  Seconds iteration_start_s = records[0].start_s;
  int last = 0;
  for (int i = 0; i < static_cast<int>(records.size()); ++i) {
    iteration_start_s = std::min(iteration_start_s, records[i].start_s);
    if (records[i].end_s > records[last].end_s) last = i;  // ties: the first record wins
  }

  // Walk backwards from the op that ends the iteration. Each entry holds an op and the link by
  // which the op after it (in time) was reached from it. `visited` guards against cycles that
  // inconsistent timestamps could create.
  std::vector<std::pair<int, PathLink>> backwards;
  std::set<int> visited;
  int current = last;
  PathLink link_to_later = PathLink::first;
  while (current >= 0) {
    const int arrival = index.last_arrival(current);
    if (arrival != current) current = arrival, link_to_later = PathLink::rendezvous;
    if (!visited.insert(current).second) break;
    backwards.push_back({current, link_to_later});
    std::tie(current, link_to_later) = index.predecessor(current);
  }

  Seconds previous_end_s = iteration_start_s;
  PathLink reached_by = PathLink::first;
  for (auto it = backwards.rbegin(); it != backwards.rend(); ++it) {
    const TraceRecord& op = records[it->first];
    path.busy_s += op.end_s - op.start_s;
    path.busy_by_kind_s[op.kind] += op.end_s - op.start_s;
    path.steps.push_back({op, op.start_s - previous_end_s, reached_by});
    previous_end_s = op.end_s;
    reached_by = it->second;
  }
  path.length_s = previous_end_s - iteration_start_s;
  path.gap_s = path.length_s - path.busy_s;
  return path;
}

}  // namespace tandem
