// The `stragglers:` section of a scenario: slowed devices or links, fixed or drawn.
//
//   stragglers:
//     - rank: 5                          # a device of the strategy's world
//       compute_slowdown: 1.3            # its compute takes 1.3x as long (>= 1)
//     - rank: random                     # drawn (seeded: `goodput --seed`, seed 1 for simulate)
//       compute_slowdown: [1.1, 1.5]     # drawn uniformly in [min, max]
//       network_bandwidth_fraction: 0.5  # its NIC at half rate, in (0, 1]
//     - rank: 2
//       compute_slowdown: 1.5
//       episodes: {every: 12h, lasting: 30min}  # transient: episodes arrive at random (Poisson,
//                                        # mean gap `every`) and last an exponential time of
//                                        # mean `lasting`; `tandem goodput` plays them over its
//                                        # horizon, `simulate` predicts the iteration without them
//
// Errors name file, line and field. The simulator makes them real (sim/reliability/straggler.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/yaml_reader.hpp"
#include "sim/reliability/straggler.hpp"

namespace tandem {

struct StragglerSpec {
  int rank = -1;  // -1: drawn
  double slowdown_min = 1, slowdown_max = 1;
  double bandwidth_min = 1, bandwidth_max = 1;
  std::string file;
  int line = 0;
  std::string field;  // "stragglers[i]"
  // Transient (episodes): mean gap between episodes and their mean length; 0: always slow.
  Seconds episode_every_s = 0, episode_mean_s = 0;
  bool transient() const { return episode_every_s > 0; }
};

// The specs that are always slow, or those that come and go.
std::vector<StragglerSpec> permanent_stragglers(const std::vector<StragglerSpec>& specs);
std::vector<StragglerSpec> transient_stragglers(const std::vector<StragglerSpec>& specs);

std::vector<StragglerSpec> read_stragglers(const YamlNode& node);

// Refuses a rank outside the world, or a slowed link where there is none: InputError at the
// straggler's line. (A rank on cores shared with others may be slowed: it holds its core longer.)
void check_stragglers(const std::vector<StragglerSpec>& specs, const Cluster& cluster, int world);

// Adds `straggler` to `stragglers`; on a rank already slow the two compound (slowdowns and
// bandwidth fractions multiply).
void add_straggler(std::vector<sim::reliability::Straggler>& stragglers, const sim::reliability::Straggler& straggler);

// The stragglers of one draw: fixed ones as given, drawn ranks and ranges from `seed`. Two
// stragglers on one rank compound.
std::vector<sim::reliability::Straggler> draw_stragglers(const std::vector<StragglerSpec>& specs, int world,
                                                         std::uint64_t seed);

}  // namespace tandem
