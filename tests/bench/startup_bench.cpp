// What a command costs before it does anything: `tandem --help`, `tandem simulate --help` and the
// simulation of a small bundled scenario (mlp-localhost, 2 ranks), each fork/exec'd as a user runs
// it, against /bin/true exec'd in the same iteration (so the ratio holds on a loaded machine).
// Each child's wall time, CPU time (user + system) and peak RSS come from wait4's rusage, which
// is that child's alone (RUSAGE_CHILDREN would keep the largest child seen). Counters:
//   wall_ms, cpu_ms, rss_MB        the command's
//   wall_vs_true, rss_vs_true      over /bin/true's in the same iterations
// The libraries a command loads are asserted in tests/cli/loaded_libraries_cli_test.cpp.
#include <benchmark/benchmark.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

struct ChildCost {
  double wall_s = 0;
  double cpu_s = 0;
  double rss_bytes = 0;
};

// Runs `argv` with stdout and stderr on /dev/null; throws unless it exits 0.
ChildCost run_child(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    if (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr)) _exit(126);
    execv(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  rusage usage{};
  if (wait4(pid, &status, 0, &usage) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error(argv[0] + " " + (argv.size() > 1 ? argv[1] : "") + " failed");
  ChildCost cost;
  cost.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  cost.cpu_s = usage.ru_utime.tv_sec + usage.ru_stime.tv_sec + (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
  cost.rss_bytes = usage.ru_maxrss * 1024.0;  // kilobytes on Linux
  return cost;
}

std::string tandem_binary() {
  return (std::filesystem::read_symlink("/proc/self/exe").parent_path() / "tandem").string();
}

void BM_Startup(benchmark::State& state, std::vector<std::string> args) {
  std::vector<std::string> argv{tandem_binary()};
  argv.insert(argv.end(), args.begin(), args.end());
  ChildCost ours, reference;
  int runs = 0;
  for (auto _ : state) {
    // Alternate which goes first, so neither always meets a warmer cache.
    const bool true_first = runs % 2 == 1;
    ChildCost t, c;
    if (true_first) t = run_child({"/bin/true"});
    c = run_child(argv);
    if (!true_first) t = run_child({"/bin/true"});
    state.SetIterationTime(c.wall_s);
    ours.wall_s += c.wall_s;
    ours.cpu_s += c.cpu_s;
    ours.rss_bytes = std::max(ours.rss_bytes, c.rss_bytes);
    reference.wall_s += t.wall_s;
    reference.rss_bytes = std::max(reference.rss_bytes, t.rss_bytes);
    ++runs;
  }
  state.counters["wall_ms"] = ours.wall_s / runs * 1e3;
  state.counters["cpu_ms"] = ours.cpu_s / runs * 1e3;
  state.counters["rss_MB"] = ours.rss_bytes / 1e6;
  state.counters["wall_vs_true"] = ours.wall_s / reference.wall_s;
  state.counters["rss_vs_true"] = ours.rss_bytes / reference.rss_bytes;
}

BENCHMARK_CAPTURE(BM_Startup, help, std::vector<std::string>{"--help"})->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(20);
BENCHMARK_CAPTURE(BM_Startup, simulate_help, std::vector<std::string>{"simulate", "--help"})
    ->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(20);
BENCHMARK_CAPTURE(BM_Startup, simulate_mlp_localhost, std::vector<std::string>{"simulate", "mlp-localhost"})
    ->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(5);

}  // namespace

BENCHMARK_MAIN();
