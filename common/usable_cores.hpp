// The cores this process can really use: its CPU affinity (taskset, cpusets) capped by a cgroup
// CPU quota (a container's --cpus). std::thread::hardware_concurrency() counts the machine's
// online CPUs instead, so under `taskset -c 0` on a 2-core machine it says 2: the CPU backend then
// gates its ranks onto 2 cores that are one, and the simulator predicts a core that is not there.
#pragma once

#include <string>

namespace tandem {

// At least 1. Read once per process (the first call), before any thread of it is pinned.
int usable_cores();

// The same, reading the cgroup files under `cgroup_root` (tests; "/sys/fs/cgroup" in
// usable_cores) and with `affinity_cpus` CPUs in the affinity mask.
int usable_cores(int affinity_cpus, const std::string& cgroup_root);

}  // namespace tandem
