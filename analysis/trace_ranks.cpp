#include "analysis/trace_ranks.hpp"

#include <algorithm>
#include <charconv>
#include <stdexcept>

namespace tandem {

std::vector<TraceRank> trace_ranks(const Cluster& cluster, int world, const std::vector<RankRole>& roles) {
  std::vector<TraceRank> ranks;
  ranks.reserve(static_cast<std::size_t>(world));
  for (int r = 0; r < world; ++r) {
    const DeviceLocation where = cluster.locate(r);
    const NodeGroup& group = cluster.groups[where.group];
    TraceRank rank{group.device.name, group.name, where.global_node};
    if (static_cast<std::size_t>(r) < roles.size()) {
      const RankRole& role = roles[static_cast<std::size_t>(r)];
      rank.stage = role.stage, rank.replica = role.replica, rank.layers = role.layers, rank.sequences = role.sequences;
    }
    ranks.push_back(std::move(rank));
  }
  return ranks;
}

namespace {

int rank_number(const std::string& text, int world) {
  int value = -1;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || text.empty())
    throw std::invalid_argument("'" + text + "' is not a rank number");
  if (value < 0 || value >= world)
    throw std::invalid_argument("rank " + text + " is not one of the " + std::to_string(world) + " ranks");
  return value;
}

}  // namespace

std::vector<bool> parse_rank_list(const std::string& text, int world) {
  std::vector<bool> keep(static_cast<std::size_t>(world), false);
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const std::size_t comma = std::min(text.find(',', begin), text.size());
    const std::string item = text.substr(begin, comma - begin);
    const std::size_t dash = item.find('-');
    const int first = rank_number(item.substr(0, dash), world);
    const int last = dash == std::string::npos ? first : rank_number(item.substr(dash + 1), world);
    if (last < first) throw std::invalid_argument("range '" + item + "' ends before it starts");
    for (int r = first; r <= last; ++r) keep[static_cast<std::size_t>(r)] = true;
    begin = comma + 1;
  }
  return keep;
}

void keep_ranks(Trace& trace, const std::vector<bool>& keep) {
  std::erase_if(trace.records, [&](const TraceRecord& r) {
    return r.rank < 0 || r.rank >= static_cast<int>(keep.size()) || !keep[static_cast<std::size_t>(r.rank)];
  });
}

}  // namespace tandem
