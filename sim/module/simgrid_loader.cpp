// The `tandem` binary's simulate(): opens libtandem_simgrid.so beside the binary on first use and
// forwards to it. Commands that never simulate (--help, check, fields, run, report, ...) never load
// SimGrid; see simulation.hpp's load_simulator().
#include <dlfcn.h>

#include "common/shared_library.hpp"
#include "sim/simulation.hpp"

namespace tandem::sim {

namespace {

using SimulateFn = SimulationResult (*)(const Strategy&, const Cluster&, const SimulationOptions&);

SimulateFn simulate_fn() {
  static const SimulateFn fn = [] {
    const SharedLibrary lib = SharedLibrary::open({executable_dir() + "/libtandem_simgrid.so"}, RTLD_NOW | RTLD_LOCAL);
    return lib.function<SimulateFn>("tandem_simgrid_simulate");
  }();
  return fn;
}

}  // namespace

void load_simulator() { simulate_fn(); }

SimulationResult simulate(const Strategy& strategy, const Cluster& cluster, const SimulationOptions& options) {
  return simulate_fn()(strategy, cluster, options);
}

}  // namespace tandem::sim
