// A straggler in one line (straggler.hpp), apart from the code that applies it to SimGrid's
// hosts and links: `tandem goodput` prints it without loading SimGrid.
#include <cstdio>
#include <string>

#include "sim/reliability/straggler.hpp"

namespace tandem::sim::reliability {

std::string describe(const Straggler& s) {
  char text[128];
  std::snprintf(text, sizeof text, "rank %d: compute x%.2f, network x%.2f", s.rank, s.compute_slowdown,
                s.network_bandwidth_fraction);
  return text;
}

}  // namespace tandem::sim::reliability
