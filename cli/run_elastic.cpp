#include "cli/run_elastic.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <regex>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "cli/simulated_iterations.hpp"
#include "common/input_error.hpp"
#include "common/input_file.hpp"
#include "common/interrupts.hpp"
#include "common/output_set.hpp"
#include "exec/cpu/checkpoint.hpp"
#include "common/usable_cores.hpp"
#include "scenarios/candidate_scenario.hpp"
#include "scenarios/scenario_writer.hpp"
#include "scenarios/search_evaluator.hpp"
#include "scenarios/search_spec.hpp"
#include "sim/reliability/restart_cost.hpp"

namespace tandem::cli {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;
constexpr double kStartupGraceS = 60;
// The failed job's stop: its ranks are killed at detection, and mpirun's exit after them is not
// modeled (measured: 6-20 ms).
constexpr double kStopS = 0;

double unix_now_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The scenario's strategy on `devices` devices: the data-parallel size shrunk to the largest that
// fits them and splits the global batch evenly (so every iteration reads the same data as
// before); the rest of the strategy is kept. Empty when none does.
std::optional<Scenario> replan(const Scenario& scenario, int devices, std::int64_t sequences_per_iteration) {
  for (int dp = scenario.parallel.data_parallel_size - 1; dp >= 1; --dp) {
    Scenario s = scenario;
    s.parallel.data_parallel_size = dp;
    try {
      const auto strategy = make_strategy(s);
      if (strategy->world_size() <= devices && strategy->sequences_per_iteration() == sequences_per_iteration) return s;
    } catch (const std::exception&) {  // this size does not make a valid strategy: a smaller one may
    }
  }
  return std::nullopt;
}

// The best plan the strategy search finds for `devices` devices (the plan file's search: section,
// its default space without one), ranked by simulated iteration time; the global batch is the
// search's constant, so every iteration reads the same data. Empty when nothing fits.
std::optional<Scenario> replan_by_search(const std::string& plan_file, int devices) {
  SearchScenario spec = load_search_scenario(plan_file, search::Objective::time);
  search::SearchSettings settings = spec.settings;
  settings.objective = search::Objective::time;
  settings.top_k = 1;
  // On all the survivors when some plan fits them, else on fewer (no split of the global batch
  // may fit an odd count: 8 sequences over 3 replicas).
  for (int d = devices; d >= 1; --d) {
    search::SearchSpace space = spec.space;
    space.nodes.clear();
    space.devices = {d};
    space.dp.clear();  // follows from the devices
    SimulationEvaluator evaluator(spec.base, usable_cores());
    const search::SearchResult result =
        search::run_search(search::enumerate(space, spec.base.cluster, spec.base.training), evaluator, settings);
    if (!result.ranked.empty()) return scenario_for(spec.base, result.ranked.front().candidate);
  }
  return std::nullopt;
}

// One launch of the job: mpirun -np N tandem run PLAN ...
struct Attempt {
  int index = 0;
  std::string plan;      // scenario file
  std::string strategy;  // its strategy's name
  int ranks = 0;
  int first_iteration = 0;
  bool on_spare = false;
  pid_t pid = -1;
  fs::path heartbeats, out, err;
  Clock::time_point launched;
  std::optional<Clock::time_point> ready;  // every rank set up, holding the checkpoint's state
  Scenario scenario;                       // the plan, for the simulator
  std::string rebalance;                   // --rebalance-after: the re-split it made ("2/2 -> 3/1")
};

struct Failure {
  int attempt = 0;
  int rank = -1;          // -1: not known
  std::string cause;      // "killed by signal 9", "no heartbeat for 30 s", ...
  int at_iteration = 0;   // the furthest iteration any rank had finished
  double detected_at_unix_s = 0;
  int resumed_from = 0;   // the checkpoint's next iteration
  int lost_iterations = 0;
  double restart_s = -1;  // detection -> the new job's ranks ready at the checkpoint
  double recovered_s = -1;  // detection -> back where the failed job was
  double stop_s = -1;       // detection -> the failed job's processes all ended
  double predicted_restart_s = -1, predicted_recovered_s = -1;  // predict_recoveries
  std::string next_plan;  // "the same plan on a spare device" or the new strategy
  Clock::time_point detected;
  // Not a failure: a shrunk job stopped at a checkpoint because the lost devices are back
  // (--repair-after), resumed on the scenario's plan. Measured and predicted as a restart.
  bool regrowth = false;
};

// A rank's heartbeat: "<pid> <next iteration>" (distributed/mpi_cpu_run.cpp).
struct Beat {
  pid_t pid = -1;
  int next_iteration = -1;
  Clock::time_point changed;
};

bool read_beat(const fs::path& file, pid_t& pid, int& next) {
  std::ifstream in(file);
  return static_cast<bool>(in >> pid >> next);
}

// "mpirun noticed that process rank 1 with PID 1234 on node x exited on signal 9 (Killed)."
int rank_named_by_mpirun(const std::string& err) {
  static const std::regex kNoticed(R"(process rank (\d+) with PID)");
  std::smatch m;
  return std::regex_search(err, m, kNoticed) ? std::stoi(m[1].str()) : -1;
}

std::string read_all(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string self_binary() { return fs::read_symlink("/proc/self/exe").string(); }

pid_t launch(const std::vector<std::string>& args, const Attempt& a) {
  const pid_t pid = interrupts::fork_registered(interrupts::ChildRole::command);
  if (pid != 0) return pid;
  // The child: signals open again (this program keeps them blocked for its watcher, and exec
  // keeps the mask), its output to the attempt's files, then mpirun.
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_UNBLOCK, &all, nullptr);
  const int out = ::open(a.out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const int err = ::open(a.err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (out < 0 || err < 0) ::_exit(127);
  ::dup2(out, 1);
  ::dup2(err, 2);
  ::setenv("TANDEM_HEARTBEAT_DIR", a.heartbeats.c_str(), 1);
  std::vector<char*> argv;
  for (const std::string& s : args) argv.push_back(const_cast<char*>(s.c_str()));
  argv.push_back(nullptr);
  ::execvp(argv[0], argv.data());
  ::_exit(127);
}

// A process stopped (SIGSTOP, a debugger) or stuck in the kernel: /proc/PID/stat's state.
bool process_stopped(pid_t pid) {
  if (pid <= 0) return false;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::size_t paren = stat.rfind(')');
  if (paren == std::string::npos || paren + 2 >= stat.size()) return false;
  const char state = stat[paren + 2];
  return state == 'T' || state == 't' || state == 'D';
}

double seconds_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// The simulator's prediction of each recovery, by the formula `tandem goodput` charges a restart
// (sim/reliability/restart_cost.hpp). What the simulator takes as given there (relaunch_s and
// init_s: the scheduler, process start, communicators, the model's build) is this machine's: the
// failed job's own start as measured (mpirun's launch to every rank's first heartbeat), as
// calibration measures kernels. The failed job's stop (mpirun tearing its other ranks down) is
// kStopS; the checkpoint is read back from the page cache (it was just written) at the device's
// streaming bandwidth; the iterations lost are trained again at the next job's simulated
// iteration time. Returns each job's simulated iteration time (0 when it could not be simulated:
// then nothing is predicted).
std::vector<double> predict_recoveries(std::vector<Attempt>& attempts, std::vector<Failure>& failures,
                                       const std::string& checkpoint_path) {
  std::vector<double> iteration_s(attempts.size(), 0.0);
  if (failures.empty() || !attempts.front().ready) return iteration_s;
  // Each plan once (jobs on spares and grown-back jobs run the plan of an earlier one).
  std::map<std::string, std::size_t> plan_index;
  std::vector<StrategyMaker> makers;
  for (const Attempt& a : attempts)
    if (plan_index.emplace(a.plan, makers.size()).second) makers.push_back([&a] { return make_strategy(a.scenario); });
  try {
    const std::vector<double> per_plan = simulated_iteration_s(
        makers, attempts.front().scenario.cluster, attempts.front().scenario.simulation, "predicting the jobs' iterations");
    for (std::size_t i = 0; i < attempts.size(); ++i) iteration_s[i] = per_plan[plan_index.at(attempts[i].plan)];
  } catch (const std::exception& e) {
    std::cerr << "elastic     no recovery prediction: " << e.what() << "\n";
    return std::vector<double>(attempts.size(), 0.0);
  }
  const Attempt& first = attempts.front();
  std::error_code ec;
  const auto checkpoint_bytes = static_cast<double>(fs::file_size(checkpoint_path, ec));
  for (Failure& f : failures) {
    if (static_cast<std::size_t>(f.attempt) + 1 >= attempts.size()) continue;  // lost after the last iteration
    const Attempt& next = attempts[static_cast<std::size_t>(f.attempt) + 1];
    sim::reliability::RestartCost cost;
    cost.stop_s = kStopS;
    // Relaunch and init together: the failed job's own start (launch to every rank ready), the
    // latest measurement of what the next job repeats on this machine as it is now; the first
    // job's when the failed one never got ready. A job that resumed measured its reload in it.
    const Attempt& known = attempts[static_cast<std::size_t>(f.attempt)].ready ? attempts[static_cast<std::size_t>(f.attempt)] : first;
    cost.relaunch_s = seconds_between(known.launched, *known.ready);
    const DeviceProfile& device = next.scenario.cluster.device_of(0);
    if (!ec && device.memory_bandwidth_bytes_per_s > 0 && known.first_iteration == 0)
      cost.reload_s = checkpoint_bytes / device.achievable_bytes_per_s(OpKind::memcpy);
    const double step_s = iteration_s[static_cast<std::size_t>(f.attempt) + 1];
    f.predicted_restart_s = sim::reliability::restart_s(cost, step_s);
    f.predicted_recovered_s = sim::reliability::recovered_s(cost, step_s, f.lost_iterations);
  }
  return iteration_s;
}

bool have_mpirun() { return std::system("command -v mpirun >/dev/null 2>&1") == 0; }

}  // namespace

int run_elastic(const RunCommandOptions& o, const ElasticOptions& e) {
  // What an elastic run cannot take, refused before anything starts.
  if (o.backend != "cpu") throw InputError("command line", 0, "--elastic", "elastic runs use the cpu backend");
  if (o.checkpoint_path.empty())
    throw InputError("command line", 0, "--elastic", "needs --checkpoint FILE: a failed job resumes from it");
  for (const auto& [given, name] : {std::pair{!o.trace_path.empty(), "--trace"}, {!o.chrome_trace_path.empty(), "--chrome-trace"},
                                    {o.warmup.value_or(0) > 0, "--warmup"}})
    if (given) throw InputError("command line", 0, name, std::string("not with --elastic (its jobs restart mid-run)"));
  if (std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMI_SIZE"))
    throw InputError("command line", 0, "--elastic", "the supervisor launches mpirun itself: run it without mpirun");
  if (!(e.heartbeat_timeout_s > 0)) throw InputError("command line", 0, "--heartbeat-timeout", "must be positive");
#ifndef TANDEM_HAVE_MPI
  throw InputError("command line", 0, "--elastic", "this build has no MPI: elastic runs launch their ranks with mpirun");
#endif
  if (!have_mpirun()) throw std::runtime_error("--elastic launches its ranks with mpirun, which is not on PATH (Debian: openmpi-bin)");
  OutputSet::check_writable(o.json_path, "--json");
  OutputSet::check_writable(o.checkpoint_path, "--checkpoint");
  if (!o.resume_path.empty()) check_input_file(o.resume_path, kMaxCheckpointBytes);
  const Scenario scenario = load_scenario(o.scenario);
  const auto first_strategy = make_strategy(scenario);
  if (first_strategy->ranks_run_ahead())  // its jobs are processes that join every iteration, and resume from checkpoints
    scenario.fail("strategy.parameter_server_asynchronous",
                  "asynchronous servers' workers run ahead of one another and hold no common checkpoint: not with --elastic");
  const std::int64_t sequences = first_strategy->sequences_per_iteration();
  const int iterations = o.iterations.value_or(10);
  const int every = o.checkpoint_every.value_or(1);

  // Work files beside the checkpoint: plans, heartbeats, each job's output.
  const fs::path work = o.checkpoint_path + ".elastic";
  fs::remove_all(work);
  fs::create_directories(work);
  // The checkpoint is this run's output: an older file there must not be taken for this run's.
  if (o.resume_path != o.checkpoint_path) fs::remove(o.checkpoint_path);
  int resume_from = 0;
  std::string resume_file = o.resume_path;
  if (!resume_file.empty()) resume_from = exec::cpu::load_checkpoint(resume_file).next_iteration;
  // --iterations counts from where the run starts, as `run --resume` counts them.
  const int end_iteration = resume_from + iterations;

  Scenario plan = scenario;
  std::string plan_file = o.scenario;
  int ranks = first_strategy->world_size();
  int spares = e.spares;
  std::vector<Attempt> attempts;
  std::vector<Failure> failures;  // and regrowths (Failure::regrowth)
  std::optional<int> regrow_at;   // --repair-after: the shrunk job's checkpoint where it grows back
  std::map<int, double> losses;  // per iteration, the last job's that ran it
  const bool quiet = o.json_path == "-";
  std::ostream& say = quiet ? std::cerr : std::cout;
  if (!quiet)
    say << "elastic     " << ranks << " rank(s) as processes, " << spares << " spare(s), checkpoint every " << every
        << " iteration(s), heartbeat timeout " << e.heartbeat_timeout_s << " s\n";

  static const std::regex kIterLine(R"(^iter\s+(\d+)\s+loss\s+(\S+))");
  static const std::regex kRebalanceLine(R"(^rebalance .*(?:micro-batches per replica|layers per stage) ([0-9/]+ -> [0-9/]+))");
  while (true) {
    Attempt a;
    a.index = static_cast<int>(attempts.size());
    a.plan = plan_file;
    a.strategy = make_strategy(plan)->name();
    a.ranks = ranks;
    a.first_iteration = resume_from;
    a.scenario = plan;
    a.on_spare = !failures.empty() && failures.back().next_plan == "the same plan on a spare device";
    a.heartbeats = work / ("heartbeats-" + std::to_string(a.index));
    a.out = work / ("job-" + std::to_string(a.index) + ".out");
    a.err = work / ("job-" + std::to_string(a.index) + ".err");
    fs::create_directories(a.heartbeats);
    // mpirun, once a rank has died, signals the others and waits odls_base_sigkill_timeout
    // (1 s by default; measured here: 1.02 s of a 1.6 s restart) before it exits, even when they
    // are gone: the supervisor kills them itself at detection (below), so mpirun need not wait.
    std::vector<std::string> args{"mpirun", "--oversubscribe", "--mca", "odls_base_sigkill_timeout", "0"};
    if (::geteuid() == 0) args.push_back("--allow-run-as-root");
    for (const std::string& s : {std::string("-np"), std::to_string(ranks), self_binary(), std::string("run"), plan_file,
                                 std::string("--backend"), std::string("cpu"), std::string("--iterations"),
                                 std::to_string(end_iteration - resume_from), std::string("--checkpoint"), o.checkpoint_path,
                                 std::string("--checkpoint-every"), std::to_string(every)})
      args.push_back(s);
    if (!resume_file.empty()) args.insert(args.end(), {"--resume", resume_file});
    if (o.seed) args.insert(args.end(), {"--seed", std::to_string(*o.seed)});
    if (o.timeout_s) args.insert(args.end(), {"--timeout", std::to_string(*o.timeout_s)});
    if (!o.corpus_path.empty()) args.insert(args.end(), {"--corpus", o.corpus_path});
    for (const std::string& s : o.slow_ranks)  // a straggler the re-planned job no longer has is dropped
      if (std::atoi(s.c_str()) < ranks) args.insert(args.end(), {"--slow-rank", s});
    // Every job re-balances its batch shares K iterations after its start, from its own ranks'
    // measured speeds (a restarted job's ranks, or a re-planned job's, are not the last job's).
    if (o.rebalance_after && end_iteration - resume_from > *o.rebalance_after)
      args.insert(args.end(), {"--rebalance-after", std::to_string(*o.rebalance_after)});
    a.launched = Clock::now();
    a.pid = launch(args, a);
    if (a.pid < 0) throw std::runtime_error("cannot start mpirun");
    attempts.push_back(a);

    // Watch the job: its output (echoed, losses kept), its ranks' heartbeats, its end.
    std::vector<Beat> beats(static_cast<std::size_t>(ranks));
    for (Beat& b : beats) b.changed = a.launched;
    std::ifstream out;
    std::string pending;
    int furthest = resume_from;
    std::optional<Clock::time_point> detected;
    std::optional<double> detected_unix;
    int dead_rank = -1;
    std::string cause;
    int status = -1;
    Clock::time_point job_ended;
    bool ranks_stopped = false;
    bool regrowing = false;
    const auto follow_output = [&] {
      if (!out.is_open()) out.open(a.out);
      if (!out.is_open()) return;
      out.clear();
      std::string chunk((std::istreambuf_iterator<char>(out)), std::istreambuf_iterator<char>());
      pending += chunk;
      std::size_t nl;
      while ((nl = pending.find('\n')) != std::string::npos) {
        const std::string line = pending.substr(0, nl);
        pending.erase(0, nl + 1);
        std::smatch m;
        if (std::regex_search(line, m, kIterLine)) losses[std::stoi(m[1].str())] = std::stod(m[2].str());
        if (std::regex_search(line, m, kRebalanceLine)) attempts.back().rebalance = m[1].str();
        if (!quiet && (line.rfind("iter", 0) == 0 || line.rfind("rebalance", 0) == 0)) say << line << "\n" << std::flush;
      }
    };
    while (true) {
      siginfo_t info{};
      info.si_pid = 0;
      const bool ended = ::waitid(P_PID, static_cast<id_t>(a.pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == a.pid;
      const Clock::time_point now = Clock::now();
      for (int r = 0; r < ranks; ++r) {
        pid_t pid = -1;
        int next = -1;
        Beat& b = beats[static_cast<std::size_t>(r)];
        if (read_beat(a.heartbeats / ("rank" + std::to_string(r)), pid, next) && (pid != b.pid || next != b.next_iteration)) {
          b.pid = pid;
          b.next_iteration = next;
          b.changed = now;
        }
        // A rank past its last iteration exits once the job's closing collectives are done, while
        // rank 0 still writes its results: that is an end, not a failure.
        const bool finished = b.next_iteration >= end_iteration;
        if (!detected && b.pid > 0 && !finished && ::kill(b.pid, 0) != 0 && errno == ESRCH && !ended) {
          detected = now;  // a rank's process is gone while its job still runs
          detected_unix = unix_now_s();
          dead_rank = r;
          cause = "its process ended";
        }
      }
      const int slowest = std::min_element(beats.begin(), beats.end(), [](const Beat& x, const Beat& y) {
                            return x.next_iteration < y.next_iteration;
                          })->next_iteration;
      furthest = std::max(furthest, std::max_element(beats.begin(), beats.end(), [](const Beat& x, const Beat& y) {
                                      return x.next_iteration < y.next_iteration;
                                    })->next_iteration);
      if (!attempts.back().ready && slowest >= a.first_iteration) attempts.back().ready = now;
      if (!failures.empty() && failures.back().attempt == a.index - 1) {
        Failure& f = failures.back();
        // Every rank set up and holding the checkpoint's state; then past where the failed job was.
        if (f.restart_s < 0 && slowest >= a.first_iteration) f.restart_s = seconds_between(f.detected, now);
        if (f.recovered_s < 0 && slowest >= f.at_iteration) f.recovered_s = seconds_between(f.detected, now);
      }
      follow_output();
      if (ended) {
        job_ended = now;
        status = interrupts::wait_registered(a.pid);
        follow_output();
        break;
      }
      if (!detected) {
        // A rank silent past the timeout: its peers go silent too, waiting for it in a collective,
        // so the one to blame is a stopped process if there is one, else the longest silent.
        int silent = -1;
        for (int r = 0; r < ranks; ++r) {
          const Beat& b = beats[static_cast<std::size_t>(r)];
          // Before its first beat a rank is starting (mpirun, MPI, the model's setup): it gets at
          // least kStartupGraceS for that, however short the timeout.
          const double allowed_s = b.pid > 0 ? e.heartbeat_timeout_s : std::max(e.heartbeat_timeout_s, kStartupGraceS);
          if (now - b.changed <= std::chrono::duration<double>(allowed_s)) continue;
          if (silent < 0 || b.changed < beats[static_cast<std::size_t>(silent)].changed) silent = r;
        }
        if (silent >= 0) {
          for (int r = 0; r < ranks; ++r)
            if (process_stopped(beats[static_cast<std::size_t>(r)].pid)) silent = r;
          detected = now;
          detected_unix = unix_now_s();
          dead_rank = silent;
          char text[80];
          std::snprintf(text, sizeof text, "no heartbeat for %g s", e.heartbeat_timeout_s);
          cause = text;
        }
      }
      if (!detected && regrow_at && slowest >= *regrow_at) {
        // The devices lost are back and every rank is past the checkpoint at *regrow_at: the job
        // stops there and grows back.
        regrowing = true;
        detected = now;
        detected_unix = unix_now_s();
        cause = "the lost devices are back";
      }
      if (detected && !ranks_stopped) {
        // The job is lost (or stops to grow back): its other ranks wait for the failed one in a collective and would not
        // stop on SIGTERM. Killed now, the restart starts at once; their state is the
        // checkpoint's, and a checkpoint being written is a temporary file (removed below).
        for (const Beat& b : beats)
          if (b.pid > 0) ::kill(b.pid, SIGKILL);
        if (cause.rfind("no heartbeat", 0) == 0) ::kill(a.pid, SIGTERM);  // and mpirun, which may wait on none
        ranks_stopped = true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    std::error_code not_there;
    for (const Beat& b : beats)  // a checkpoint a killed rank was writing (common/output_set.hpp's name)
      if (b.pid > 0) fs::remove(o.checkpoint_path + ".tmp." + std::to_string(b.pid), not_there);
    if (code == 0) break;
    // The checkpoint the next job resumes from, held by a link of its own: the iteration read
    // here is the one it starts at whatever is written to the checkpoint's name later.
    const auto snapshot_checkpoint = [&] {
      if (!fs::exists(o.checkpoint_path)) return;
      const fs::path snapshot = work / ("resume-" + std::to_string(a.index + 1) + ".ck");
      std::error_code no_link;
      fs::create_hard_link(o.checkpoint_path, snapshot, no_link);
      if (no_link) fs::copy_file(o.checkpoint_path, snapshot, fs::copy_options::overwrite_existing);
      resume_file = snapshot.string();
      resume_from = exec::cpu::load_checkpoint(resume_file).next_iteration;
    };
    // The stopped job's record: where it was, when it was found out, where the next one resumes.
    const auto stopped_job = [&](const std::string& why) {
      Failure f;
      f.attempt = a.index;
      f.cause = why;
      f.at_iteration = furthest;
      f.detected_at_unix_s = *detected_unix;
      f.detected = *detected;
      f.stop_s = std::max(0.0, seconds_between(*detected, job_ended));
      snapshot_checkpoint();
      f.resumed_from = resume_from;
      f.lost_iterations = std::max(0, furthest - resume_from);
      return f;
    };
    if (regrowing) {
      Failure g = stopped_job(cause);
      g.regrowth = true;
      plan = scenario;
      plan_file = o.scenario;
      ranks = first_strategy->world_size();
      g.next_plan = first_strategy->name();
      regrow_at.reset();
      failures.push_back(g);
      if (!quiet)
        say << "regrowth    job " << a.index << " stopped at iteration " << resume_from
            << ": the lost devices are back; resuming on " << g.next_plan << "\n" << std::flush;
      continue;
    }
    const std::string err = read_all(a.err);
    if (code == 2 || code == 3) {  // bad input or divergence: a restart would meet it again
      std::cerr << err;
      return code;
    }
    if (!detected) {
      detected = Clock::now();
      detected_unix = unix_now_s();
    }
    // A rank that died may take its job down before its vanished process is seen (mpirun exits at
    // once: odls_base_sigkill_timeout 0); mpirun's message then names it and its signal.
    const bool rank_died = cause.empty() || cause == "its process ended";
    if (dead_rank < 0) dead_rank = rank_named_by_mpirun(err);
    if (cause.empty()) cause = "its job ended with status " + std::to_string(code);
    static const std::regex kSignal(R"(exited on signal (\d+))");
    std::smatch sig;
    if (rank_died && std::regex_search(err, sig, kSignal)) cause = "killed by signal " + sig[1].str();

    Failure f = stopped_job(cause);
    f.rank = dead_rank;
    if (f.resumed_from >= end_iteration) {
      // Lost after its last iteration's checkpoint: every iteration is done, nothing to restart.
      f.next_plan = "none: every iteration was done";
      failures.push_back(f);
      if (!quiet)
        say << "failure     rank " << f.rank << " of job " << f.attempt << " (" << f.cause
            << ") after the last iteration's checkpoint; nothing left to run\n" << std::flush;
      break;
    }
    const auto failed = std::count_if(failures.begin(), failures.end(), [](const Failure& x) { return !x.regrowth; });
    if (failed >= e.max_restarts)
      throw std::runtime_error("rank " + std::to_string(dead_rank) + " failed (" + cause + ") after " +
                               std::to_string(failed) + " restarts (--max-restarts)");
    if (spares > 0) {
      --spares;
      f.next_plan = "the same plan on a spare device";
    } else {
      std::optional<Scenario> smaller =
          e.replan_by_search ? replan_by_search(plan_file, ranks - 1) : replan(plan, ranks - 1, sequences);
      if (!smaller)
        throw std::runtime_error("rank " + std::to_string(dead_rank) + " failed (" + cause + ") and no plan fits the " +
                                 std::to_string(ranks - 1) + " surviving device(s)");
      plan = *smaller;
      plan_file = (work / ("plan-" + std::to_string(a.index + 1) + ".yaml")).string();
      write_scenario(plan, plan_file, "re-planned by tandem run --elastic for " + std::to_string(ranks - 1) + " device(s)");
      const auto strategy = make_strategy(plan);
      ranks = strategy->world_size();
      f.next_plan = strategy->name();
      // Shrunk: the devices lost come back --repair-after iterations on, and the job grows back
      // at its first checkpoint from then (checkpoints every `every` iterations from resume_from).
      if (e.repair_after > 0) {
        const int g = resume_from + (e.repair_after + every - 1) / every * every;
        if (g < end_iteration) regrow_at = g;
      }
    }
    failures.push_back(f);
    if (!quiet) {
      if (dead_rank < 0) say << err;
      char line[400];
      std::snprintf(line, sizeof line,
                    "failure     rank %d of job %d (%s) after iteration %d; resuming from iteration %d (%d lost) on %s\n",
                    f.rank, f.attempt, f.cause.c_str(), f.at_iteration - 1, f.resumed_from, f.lost_iterations,
                    f.next_plan.c_str());
      say << line << std::flush;
    }
  }

  const std::vector<double> simulated_s = predict_recoveries(attempts, failures, o.checkpoint_path);
  nlohmann::json j;
  j["scenario"] = scenario.name;
  j["iterations"] = iterations;
  j["first_iteration"] = attempts.front().first_iteration;
  j["checkpoint_every"] = every;
  j["heartbeat_timeout_s"] = e.heartbeat_timeout_s;
  j["spares_left"] = spares;
  for (std::size_t i = 0; i < attempts.size(); ++i) {
    const Attempt& a = attempts[i];
    j["jobs"].push_back({{"strategy", a.strategy}, {"ranks", a.ranks}, {"first_iteration", a.first_iteration},
                         {"on_spare", a.on_spare}, {"plan", a.plan},
                         {"start_s", a.ready ? seconds_between(a.launched, *a.ready) : -1.0},
                         {"simulated_iteration_s", simulated_s[i]}});
    if (!a.rebalance.empty()) j["jobs"].back()["rebalance"] = a.rebalance;
  }
  j["failures"] = nlohmann::json::array();
  j["regrowths"] = nlohmann::json::array();
  for (const Failure& f : failures) {
    nlohmann::json r{{"job", f.attempt}, {"at_iteration", f.at_iteration}, {"resumed_from", f.resumed_from},
                     {"lost_iterations", f.lost_iterations}, {"restart_s", f.restart_s},
                     {"recovered_s", f.recovered_s}, {"stop_s", f.stop_s},
                     {"predicted_restart_s", f.predicted_restart_s},
                     {"predicted_recovered_s", f.predicted_recovered_s}, {"next_plan", f.next_plan}};
    if (f.regrowth) {
      j["regrowths"].push_back(r);
      continue;
    }
    r["rank"] = f.rank;
    r["cause"] = f.cause;
    r["detected_at_unix_s"] = f.detected_at_unix_s;
    j["failures"].push_back(r);
  }
  nlohmann::json curve = nlohmann::json::array();
  for (const auto& [it, loss] : losses) curve.push_back({{"iteration", it}, {"loss", loss}});
  j["losses"] = curve;
  j["final_strategy"] = attempts.back().strategy;
  if (quiet) {
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  if (!o.json_path.empty()) {
    OutputSet outputs;
    outputs.stage(o.json_path, j.dump(2) + "\n");
    outputs.commit();
  }
  char line[400];
  for (const Failure& f : failures) {
    if (static_cast<std::size_t>(f.attempt) + 1 >= attempts.size()) continue;  // nothing was restarted
    std::snprintf(line, sizeof line,
                  "%-11s job %d: restarted in %.2f s (ranks ready at the checkpoint), back at iteration %d "
                  "%.2f s after the %s",
                  f.regrowth ? "regrown" : "recovery", f.attempt + 1, f.restart_s, f.at_iteration, f.recovered_s,
                  f.regrowth ? "stop" : "failure was detected");
    say << line;
    if (f.predicted_recovered_s >= 0) {
      std::snprintf(line, sizeof line, "; predicted %.2f s and %.2f s", f.predicted_restart_s, f.predicted_recovered_s);
      say << line;
    }
    say << "\n";
  }
  const auto regrown = std::count_if(failures.begin(), failures.end(), [](const Failure& x) { return x.regrowth; });
  std::snprintf(line, sizeof line,
                "elastic     %d iteration(s) trained in %zu job(s), %zu failure(s), %zu regrowth(s); final strategy %s\n",
                end_iteration - attempts.front().first_iteration, attempts.size(), failures.size() - regrown,
                static_cast<std::size_t>(regrown), attempts.back().strategy.c_str());
  say << line << "checkpoint  " << o.checkpoint_path << "\n";
  return 0;
}

}  // namespace tandem::cli
