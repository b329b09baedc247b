// The `tandem` binary's simulate() and benchmark_collective(): they open libtandem_simgrid.so
// beside the binary on first use and forward to it. Commands that never simulate (--help, check,
// fields, run, report, ...) never load SimGrid; see simulation.hpp's load_simulator().
#include <dlfcn.h>

#include "common/shared_library.hpp"
#include "sim/collectives/collective_benchmark.hpp"
#include "sim/simulation.hpp"

namespace tandem::sim {

namespace {

using SimulateFn = SimulationResult (*)(const Strategy&, const Cluster&, const SimulationOptions&);
using BenchmarkFn = CollectiveBenchmark (*)(const Cluster&, OpKind, Bytes, int, CollectiveAlgorithm);

// The module, opened once (it stays loaded for the process).
const SharedLibrary& module() {
  static const SharedLibrary lib =
      SharedLibrary::open({executable_dir() + "/libtandem_simgrid.so"}, RTLD_NOW | RTLD_LOCAL);
  return lib;
}

SimulateFn simulate_fn() {
  static const SimulateFn fn = module().function<SimulateFn>("tandem_simgrid_simulate");
  return fn;
}

}  // namespace

void load_simulator() { simulate_fn(); }

SimulationResult simulate(const Strategy& strategy, const Cluster& cluster, const SimulationOptions& options) {
  return simulate_fn()(strategy, cluster, options);
}

CollectiveBenchmark benchmark_collective(const Cluster& cluster, OpKind kind, Bytes bytes, int ranks,
                                         CollectiveAlgorithm algorithm) {
  static const BenchmarkFn fn = module().function<BenchmarkFn>("tandem_simgrid_benchmark_collective");
  return fn(cluster, kind, bytes, ranks, algorithm);
}

}  // namespace tandem::sim
