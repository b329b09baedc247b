#include "exec/cpu/calibration/machine_load.hpp"

#include <sched.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <cctype>
#include <fstream>
#include <sstream>
#include <string>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace tandem::exec::cpu {

namespace {

double thread_cpu_s() {
  timespec t{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

double seconds_of(const timeval& t) { return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec); }

// The CPUs this process may run on, as it started (the CPU backend pins its threads later): a
// program busy on a CPU outside them (`taskset -c 0` on 2 cores) takes nothing from this one.
const cpu_set_t& process_cpus() {
  static const cpu_set_t cpus = [] {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (::sched_getaffinity(0, sizeof set, &set) != 0)
      for (int c = 0; c < CPU_SETSIZE; ++c) CPU_SET(c, &set);
    return set;
  }();
  return cpus;
}

}  // namespace

OtherProgramsMeter::OtherProgramsMeter() : start_(sample()) {}

void OtherProgramsMeter::restart() { start_ = sample(); }

OtherProgramsMeter::Sample OtherProgramsMeter::sample() {
  Sample s;
  s.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  // Ours: this process and the children it has waited for (a test's `tandem` run), whose CPU
  // time is no other program's.
  rusage own{}, children{};
  ::getrusage(RUSAGE_SELF, &own);
  ::getrusage(RUSAGE_CHILDREN, &children);
  s.own_s = seconds_of(own.ru_utime) + seconds_of(own.ru_stime) + seconds_of(children.ru_utime) +
            seconds_of(children.ru_stime);
  std::ifstream stat("/proc/stat");
  std::string line;
  const double ticks_per_s = static_cast<double>(::sysconf(_SC_CLK_TCK));
  // Lines "cpuN user nice system idle iowait irq softirq steal ...", one per CPU: busy = all but
  // idle and iowait (steal included: the hypervisor running another guest on our CPU).
  double busy_ticks = 0;
  bool any = false;
  while (std::getline(stat, line) && line.rfind("cpu", 0) == 0) {
    if (line.size() < 4 || !std::isdigit(static_cast<unsigned char>(line[3]))) continue;  // "cpu  ...": the total
    std::istringstream fields(line.substr(3));
    int cpu = -1;
    if (!(fields >> cpu) || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &process_cpus())) continue;
    double v[8] = {};
    for (double& x : v) fields >> x;
    busy_ticks += v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
    any = true;
  }
  if (any) s.busy_s = busy_ticks / ticks_per_s;
  return s;
}

double OtherProgramsMeter::cores() const {
  const Sample now = sample();
  if (start_.busy_s < 0 || now.busy_s < 0 || now.wall_s <= start_.wall_s) return 0;
  const double others_s = (now.busy_s - start_.busy_s) - (now.own_s - start_.own_s);
  return std::max(0.0, others_s / (now.wall_s - start_.wall_s));
}

double OtherProgramsMeter::own_cores() const {
  const Sample now = sample();
  if (now.wall_s <= start_.wall_s) return 0;
  return (now.own_s - start_.own_s) / (now.wall_s - start_.wall_s);
}

CoreShare measure_core_share(int threads, int cores, double duration_s) {
  std::vector<double> shares(static_cast<std::size_t>(threads), 0.0);
  std::vector<std::thread> workers;
  std::atomic<int> ready{0};
  for (int i = 0; i < threads; ++i) {
    workers.emplace_back([&, i] {
      ready.fetch_add(1);
      while (ready.load() < threads) std::this_thread::yield();  // start together
      const auto wall0 = std::chrono::steady_clock::now();
      const double cpu0 = thread_cpu_s();
      volatile std::uint64_t sink = 0;
      double wall = 0;
      do {
        for (int k = 0; k < 10000; ++k) sink = sink + static_cast<std::uint64_t>(k);
        wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
      } while (wall < duration_s);
      shares[static_cast<std::size_t>(i)] = std::min(1.0, (thread_cpu_s() - cpu0) / wall);
    });
  }
  for (auto& w : workers) w.join();
  CoreShare result;
  result.threads = threads;
  double sum = 0;
  for (double s : shares) sum += s;
  result.share = sum / threads;
  // Within 2% of whole cores is measurement noise, not load.
  const double taken = cores - sum;
  if (taken > 0.02 * cores) result.background_load = std::min<double>(cores, taken);
  return result;
}

}  // namespace tandem::exec::cpu
