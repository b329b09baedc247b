// A failure profile (platforms/failure_profile.hpp) scaled to one job: each cause's rate per
// device, node or leaf switch times the job's count of them, and what an interruption takes out.
// Poisson processes add, so the job's rate is the sum and its MTBF the inverse (what makes a
// 16,384-GPU job fail every few hours when each GPU lasts years).
#pragma once

#include <vector>

#include "platforms/failure_profile.hpp"
#include "sim/reliability/goodput_model.hpp"

namespace tandem::sim::reliability {

struct JobShape {
  int devices = 0;
  int nodes = 0;
  int leaf_switches = 1;
  int nodes_per_leaf = 1;  // nodes a leaf switch failure takes out
};

// `rate_scale` multiplies every rate (what-if: a younger or older fleet); `repair_s` is how long
// a failed node is out. `leaf_switch_mtbf_s` > 0 adds a correlated cause of its own: a leaf switch
// failing takes every node under it.
std::vector<FailureStream> failure_streams(const FailureProfile& profile, const JobShape& job, double rate_scale,
                                           Seconds repair_s, Seconds leaf_switch_mtbf_s = 0);

}  // namespace tandem::sim::reliability
