#include "sim/reliability/failure_streams.hpp"

namespace tandem::sim::reliability {

std::vector<FailureStream> failure_streams(const FailureProfile& profile, const JobShape& job, double rate_scale,
                                           Seconds repair_s, Seconds leaf_switch_mtbf_s) {
  std::vector<FailureStream> streams;
  for (const FailureCause& cause : profile.causes) {
    FailureStream s;
    s.cause = cause.name;
    double units = job.devices;
    s.nodes_taken = 1;
    switch (cause.scope) {
      case FailureScope::device: break;
      case FailureScope::node: units = job.nodes; break;
      case FailureScope::leaf_switch:
        units = job.leaf_switches;
        s.nodes_taken = job.nodes_per_leaf;
        break;
      case FailureScope::job: s.nodes_taken = 0; break;
    }
    s.rate_per_s = profile.rate_per_unit_per_s(cause) * units * rate_scale;
    s.repair_s = s.nodes_taken > 0 ? repair_s : 0;
    streams.push_back(s);
  }
  if (leaf_switch_mtbf_s > 0)
    streams.push_back({"leaf_switch", job.leaf_switches / leaf_switch_mtbf_s, job.nodes_per_leaf, repair_s});
  return streams;
}

}  // namespace tandem::sim::reliability
