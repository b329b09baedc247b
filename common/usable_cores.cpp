#include "common/usable_cores.hpp"

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

namespace tandem {

namespace {

// The quota over the period in cores, 0 when unlimited or unreadable. cgroup v2: one file
// "max 100000" or "150000 100000"; v1: cpu.cfs_quota_us (-1: none) and cpu.cfs_period_us.
double quota_cores(const std::string& root) {
  std::ifstream v2(root + "/cpu.max");
  std::string quota;
  double period = 0;
  if (v2 >> quota >> period) {
    const double q = std::strtod(quota.c_str(), nullptr);  // "max" (no limit) reads as 0
    return q > 0 && period > 0 ? q / period : 0;
  }
  std::ifstream v1_quota(root + "/cpu/cpu.cfs_quota_us"), v1_period(root + "/cpu/cpu.cfs_period_us");
  double q = 0;
  if (v1_quota >> q && v1_period >> period && q > 0 && period > 0) return q / period;
  return 0;
}

int affinity_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) != 0) return static_cast<int>(std::thread::hardware_concurrency());
  return CPU_COUNT(&set);
}

}  // namespace

int usable_cores(int affinity, const std::string& cgroup_root) {
  int cores = std::max(1, affinity);
  const double quota = quota_cores(cgroup_root);
  // A quota of 1.5 cores lets 2 threads run half the time each: 2 cores that are slower, which
  // the simulator cannot describe either way; rounding up keeps the ranks' parallelism.
  if (quota > 0 && quota < cores) cores = std::max(1, static_cast<int>(std::ceil(quota - 1e-9)));
  return cores;
}

int usable_cores() {
  static const int cores = usable_cores(affinity_cpus(), "/sys/fs/cgroup");
  return cores;
}

}  // namespace tandem
