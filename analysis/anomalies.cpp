#include "analysis/anomalies.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>

#include "analysis/format.hpp"

namespace tandem {

namespace {

constexpr double kRankFloor = 0.05;      // a rank this much slower than its peers' median, at least
constexpr double kOpFloor = 0.5;         // an op 50% slower
constexpr Seconds kOpFloorS = 20e-6;     // and 20 us slower (launch noise on tiny ops)
constexpr double kNoiseWidths = 4;       // and this many median absolute deviations
constexpr std::size_t kOpsListed = 10;
constexpr int kFewestPeers = 3;

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  return n == 0 ? 0 : n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

double median_absolute_deviation(const std::vector<double>& values, double centre) {
  std::vector<double> deviations;
  for (double v : values) deviations.push_back(std::abs(v - centre));
  return median(deviations);
}

bool stands_out(double value, double centre, double noise, double floor_fraction, double floor_abs) {
  return value - centre > std::max({floor_fraction * centre, kNoiseWidths * noise, floor_abs});
}

}  // namespace

Anomalies find_anomalies(const Trace& trace) {
  // Compute time per rank, and per (rank, op) with its kind, summed over the iterations.
  struct OpTime {
    Seconds sum_s = 0;
    int count = 0;
    OpKind kind = OpKind::gemm;
  };
  std::map<int, Seconds> compute_s;
  std::map<std::pair<int, std::string>, OpTime> op_s;
  std::set<int> iterations;
  for (const TraceRecord& r : trace.records) {
    iterations.insert(r.iteration);
    if (r.stream != Stream::compute) continue;
    compute_s[r.rank] += r.end_s - r.start_s;
    OpTime& t = op_s[{r.rank, r.op_id}];
    t.sum_s += r.end_s - r.start_s, ++t.count, t.kind = r.kind;
  }
  const double per_iteration = 1.0 / std::max<std::size_t>(1, iterations.size());

  // Peer groups: same device and stage; each rank's group, and each group's ops by id.
  std::map<std::pair<std::string, int>, std::vector<int>> groups;
  std::map<int, const std::vector<int>*> group_of;
  for (const auto& [rank, seconds] : compute_s) {
    const bool known = rank < static_cast<int>(trace.ranks.size());
    const TraceRank where = known ? trace.ranks[static_cast<std::size_t>(rank)] : TraceRank{};
    groups[{where.device, where.stage}].push_back(rank);
  }
  for (const auto& [key, members] : groups)
    for (int rank : members) group_of[rank] = &members;
  std::map<const std::vector<int>*, std::map<std::string, std::vector<std::pair<int, double>>>> ops_of_group;
  for (const auto& [rank_op, t] : op_s)
    ops_of_group[group_of.at(rank_op.first)][rank_op.second].push_back({rank_op.first, t.sum_s / t.count});

  Anomalies out;
  for (const auto& [key, members] : groups) {
    if (static_cast<int>(members.size()) < kFewestPeers) continue;
    out.ranks_checked += static_cast<int>(members.size());
    std::vector<double> times;
    for (int rank : members) times.push_back(compute_s[rank] * per_iteration);
    const double centre = median(times), noise = median_absolute_deviation(times, centre);
    for (std::size_t i = 0; i < members.size(); ++i)
      if (stands_out(times[i], centre, noise, kRankFloor, 0))
        out.ranks.push_back({members[i], times[i], centre, static_cast<int>(members.size())});

    // The same op across the group.
    for (const auto& [op_id, per_rank] : ops_of_group[&members]) {
      if (static_cast<int>(per_rank.size()) < kFewestPeers) continue;
      std::vector<double> durations;
      for (const auto& [rank, d] : per_rank) durations.push_back(d);
      const double op_centre = median(durations), op_noise = median_absolute_deviation(durations, op_centre);
      for (const auto& [rank, d] : per_rank)
        if (stands_out(d, op_centre, op_noise, kOpFloor, kOpFloorS))
          out.ops.push_back({rank, op_id, op_s.at({rank, op_id}).kind, d, op_centre});
    }
  }
  std::sort(out.ranks.begin(), out.ranks.end(),
            [](const RankAnomaly& a, const RankAnomaly& b) { return a.slower() > b.slower(); });
  std::sort(out.ops.begin(), out.ops.end(), [](const OpAnomaly& a, const OpAnomaly& b) {
    return a.duration_s - a.peers_median_s > b.duration_s - b.peers_median_s;
  });
  if (out.ops.size() > kOpsListed) out.ops.resize(kOpsListed);
  return out;
}

nlohmann::json to_json(const Anomalies& a) {
  nlohmann::json ranks = nlohmann::json::array(), ops = nlohmann::json::array();
  for (const auto& r : a.ranks)
    ranks.push_back({{"rank", r.rank}, {"compute_s", r.compute_s}, {"peers_median_s", r.peers_median_s},
                     {"peers", r.peers}, {"slower", r.slower()}});
  for (const auto& o : a.ops)
    ops.push_back({{"rank", o.rank}, {"op", o.op_id}, {"kind", to_string(o.kind)}, {"duration_s", o.duration_s},
                   {"peers_median_s", o.peers_median_s}, {"slower", o.slower()}});
  return {{"ranks_checked", a.ranks_checked}, {"slow_ranks", ranks}, {"slow_ops", ops}};
}

std::string to_text(const Anomalies& a, const std::string& indent) {
  std::ostringstream out;
  if (a.ranks_checked == 0) {
    out << indent << "no peer group of 3 or more ranks: stragglers cannot be told from the work's own differences\n";
    return out.str();
  }
  if (a.ranks.empty())
    out << indent << "no straggler: every rank's compute within the noise of its peers' (" << a.ranks_checked
        << " ranks checked)\n";
  for (const auto& r : a.ranks)
    out << indent << "straggler: rank " << r.rank << " computes " << human_seconds(r.compute_s) << " per iteration, "
        << printf_string("%+.1f%%", 100 * r.slower()) << " over the median of the " << r.peers
        << " ranks of its device and stage (" << human_seconds(r.peers_median_s) << ")\n";
  for (const auto& o : a.ops)
    out << indent << "slow op: rank " << o.rank << " " << o.op_id << " (" << to_string(o.kind) << ") "
        << human_seconds(o.duration_s) << ", " << printf_string("%+.0f%%", 100 * o.slower()) << " over its peers' "
        << human_seconds(o.peers_median_s) << "\n";
  return out.str();
}

}  // namespace tandem
