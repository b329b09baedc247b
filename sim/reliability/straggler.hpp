// A straggler: one device that computes slower (thermal throttling, a failing GPU) or whose link
// runs slower (a degraded cable or NIC). It is made real in the SimGrid platform - the device's
// host runs at a fraction of its speed (a speed profile, and the property below for the kernels
// the device plays on its own timeline), its link at a fraction of its bandwidth - so the
// simulated iteration feels it through the strategy's own dependencies (a pipeline stage, a
// collective waiting for the slow member), not through a multiplier on the result. The device
// profile is untouched: MFU is still computed against the nominal peak.
#pragma once

#include <simgrid/s4u.hpp>

#include <string>
#include <vector>

#include "platforms/cluster.hpp"

namespace tandem::sim::reliability {

struct Straggler {
  int rank = 0;
  double compute_slowdown = 1;            // >= 1: its compute takes this many times longer
  // (0, 1]: its NIC (or, in a one-node cluster, its intra-node port); devices sharing that NIC
  // share the slowdown, as they would share the degraded cable.
  double network_bandwidth_fraction = 1;
};

// The host property that carries a straggler's compute slowdown to its simulated device: the
// device prices each kernel with the cost model and plays it as a sleep on its own timeline
// (sim/sim_device.cpp), so it reads its host's slowdown instead of executing flops on it.
inline constexpr const char* kComputeSlowdownProperty = "compute_slowdown";

std::string describe(const Straggler& straggler);  // "rank 5: compute x1.30, network x0.50"

// Slows the hosts and links of `stragglers` on a built platform (before the engine runs). A rank
// whose compute runs on cores shared with other ranks (CPU devices) takes `compute_slowdown`
// times as long for each kernel it runs on a core.
void apply_stragglers(const std::vector<Straggler>& stragglers, const Cluster& cluster,
                      const std::vector<simgrid::s4u::Host*>& hosts);

}  // namespace tandem::sim::reliability
