// Published failure rates of large training runs, by cause, as data (platforms/failures/*.yaml,
// each with its source): how many unexpected interruptions a run of a given size saw over how
// long, and what each kind of interruption takes down. The reliability simulator
// (sim/reliability/) scales them to the simulated job: a cause's rate per unit (device, node,
// leaf switch) times the job's units.
#pragma once

#include <string>
#include <vector>

#include "common/units.hpp"

namespace tandem {

// What one interruption takes out of the job.
enum class FailureScope {
  device,       // one device: its node leaves the job until repaired
  node,         // one node
  leaf_switch,  // every node under one leaf switch (correlated)
  job,          // nothing: the job restarts on the same hardware (software, timeouts)
};
const char* to_string(FailureScope scope);
FailureScope parse_failure_scope(const std::string& text);  // std::invalid_argument

struct FailureCause {
  std::string name;
  FailureScope scope = FailureScope::device;
  double interruptions = 0;  // observed over the profile's period and size
  std::string includes;      // the source's own categories, for the reader
  int line = 0;
};

struct FailureProfile {
  std::string name;
  std::string file;
  std::string source;
  double observed_days = 0;
  int observed_devices = 0;
  int observed_devices_per_node = 0;
  int observed_leaf_switches = 0;  // needed only by leaf_switch causes
  std::vector<FailureCause> causes;

  // Interruptions per second per unit of the cause's scope (job-scoped causes: per device, as
  // software failures grow with the number of processes).
  double rate_per_unit_per_s(const FailureCause& cause) const;
};

// Loads a profile; errors name file, line and field (exit 2).
FailureProfile load_failure_profile(const std::string& path);
// A path, or the name of a bundled profile (platforms/failures/<name>.yaml).
FailureProfile find_failure_profile(const std::string& name_or_path);

}  // namespace tandem
