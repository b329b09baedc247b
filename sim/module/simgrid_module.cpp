// libtandem_simgrid.so: the simulator's SimGrid code (simulation, devices, platform, collectives'
// runs), opened by `tandem` when a command first simulates (simgrid_loader.cpp). It is linked with
// -Bsymbolic, so its own functions call each other; everything else (strategies, platforms, the
// cost models) it takes from the binary, which exports it.
#include "sim/collectives/collective_benchmark.hpp"
#include "sim/simulation.hpp"

extern "C" __attribute__((visibility("default"))) tandem::sim::SimulationResult tandem_simgrid_simulate(
    const tandem::Strategy& strategy, const tandem::Cluster& cluster, const tandem::sim::SimulationOptions& options) {
  return tandem::sim::simulate(strategy, cluster, options);
}

// The simulated nccl-tests of `validate`'s NCCL cases (validation/nccl_validation_run.cpp).
extern "C" __attribute__((visibility("default"))) tandem::sim::CollectiveBenchmark tandem_simgrid_benchmark_collective(
    const tandem::Cluster& cluster, tandem::OpKind kind, tandem::Bytes bytes, int ranks,
    tandem::sim::CollectiveAlgorithm algorithm) {
  return tandem::sim::benchmark_collective(cluster, kind, bytes, ranks, algorithm);
}
