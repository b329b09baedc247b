#include "scenarios/straggler_reader.hpp"

#include <algorithm>
#include <iterator>

#include "scenarios/reliability_spec.hpp"
#include "sim/reliability/random_stream.hpp"

namespace tandem {

namespace {
// A device 100x slower is not a straggler but a failure; a link at 1/1000 of its rate likewise.
constexpr limits::Range kSlowdown{1, 100, "x"};
constexpr limits::Range kBandwidthFraction{1e-3, 1, "of nominal"};
// Episodes: at least a minute apart on average, and a second to a year long.
constexpr limits::Range kEpisodeGap{60, 365.25 * 86400, "s"};
constexpr limits::Range kEpisodeLength{1, 365.25 * 86400, "s"};

// A number, or [min, max] to draw from.
void read_range(const YamlNode& node, const limits::Range& range, double& low, double& high) {
  if (!node.is_sequence()) {
    low = high = node.in(range);
    return;
  }
  const std::vector<YamlNode> bounds = node.items();
  if (bounds.size() != 2) node.fail("expects a number or [min, max]");
  low = bounds[0].in(range);
  high = bounds[1].in(range);
  if (high < low) node.fail("max is below min");
}
}  // namespace

std::vector<StragglerSpec> read_stragglers(const YamlNode& node) {
  std::vector<StragglerSpec> specs;
  for (const YamlNode& item : node.items()) {
    item.only_keys({"rank", "compute_slowdown", "network_bandwidth_fraction", "episodes"});
    StragglerSpec s;
    s.file = item.file();
    s.field = item.path();
    const YamlNode rank = item["rank"];
    s.line = rank.line();
    if (rank.as_string() != "random") s.rank = static_cast<int>(rank.count({0, 1 << 24}));
    if (auto n = item.get("compute_slowdown")) read_range(*n, kSlowdown, s.slowdown_min, s.slowdown_max);
    if (auto n = item.get("network_bandwidth_fraction"))
      read_range(*n, kBandwidthFraction, s.bandwidth_min, s.bandwidth_max);
    if (!item.has("compute_slowdown") && !item.has("network_bandwidth_fraction"))
      item.fail("a straggler needs compute_slowdown or network_bandwidth_fraction");
    if (auto n = item.get("episodes")) {
      n->only_keys({"every", "lasting"});
      s.episode_every_s = duration_of((*n)["every"], kEpisodeGap);
      s.episode_mean_s = duration_of((*n)["lasting"], kEpisodeLength);
    }
    specs.push_back(s);
  }
  return specs;
}

std::vector<StragglerSpec> permanent_stragglers(const std::vector<StragglerSpec>& specs) {
  std::vector<StragglerSpec> out;
  std::copy_if(specs.begin(), specs.end(), std::back_inserter(out), [](const StragglerSpec& s) { return !s.transient(); });
  return out;
}

std::vector<StragglerSpec> transient_stragglers(const std::vector<StragglerSpec>& specs) {
  std::vector<StragglerSpec> out;
  std::copy_if(specs.begin(), specs.end(), std::back_inserter(out), [](const StragglerSpec& s) { return s.transient(); });
  return out;
}

void check_stragglers(const std::vector<StragglerSpec>& specs, const Cluster& cluster, int world) {
  for (const StragglerSpec& s : specs) {
    if (s.rank >= world)
      throw InputError(s.file, s.line, s.field + ".rank",
                       "rank " + std::to_string(s.rank) + " is outside the strategy's " + std::to_string(world) + " ranks");
    if (s.bandwidth_min < 1 && cluster.node_count() == 1 && cluster.groups[0].devices_per_node == 1)
      throw InputError(s.file, s.line, s.field + ".network_bandwidth_fraction", "a single device has no link to slow");
  }
}

std::vector<sim::reliability::Straggler> draw_stragglers(const std::vector<StragglerSpec>& specs, int world,
                                                         std::uint64_t seed) {
  sim::reliability::RandomStream rng(seed);
  std::vector<sim::reliability::Straggler> out;
  for (const StragglerSpec& s : specs) {
    // Every spec draws the same three numbers, used or not, so one spec's draw does not shift another's.
    const auto drawn_rank = static_cast<int>(rng.below(static_cast<std::uint64_t>(world)));
    const double u_slow = rng.uniform_open();
    const double u_bandwidth = rng.uniform_open();
    sim::reliability::Straggler st;
    st.rank = s.rank >= 0 ? s.rank : drawn_rank;
    st.compute_slowdown = s.slowdown_min + u_slow * (s.slowdown_max - s.slowdown_min);
    st.network_bandwidth_fraction = s.bandwidth_min + u_bandwidth * (s.bandwidth_max - s.bandwidth_min);
    add_straggler(out, st);
  }
  return out;
}

void add_straggler(std::vector<sim::reliability::Straggler>& stragglers, const sim::reliability::Straggler& straggler) {
  auto same = std::find_if(stragglers.begin(), stragglers.end(), [&](const auto& s) { return s.rank == straggler.rank; });
  if (same == stragglers.end()) {
    stragglers.push_back(straggler);
    return;
  }
  same->compute_slowdown *= straggler.compute_slowdown;
  same->network_bandwidth_fraction *= straggler.network_bandwidth_fraction;
}

}  // namespace tandem
