#include "cli/run_command.hpp"

#include "analysis/anomalies.hpp"
#include "analysis/trace_ranks.hpp"
#include "cli/option_ranges.hpp"
#include "cli/run_elastic.hpp"
#include "cli/run_rebalance.hpp"
#include "cli/straggler_watch.hpp"
#include "cli/trace_outputs.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <optional>

#include "analysis/chrome_trace.hpp"
#include "analysis/trace.hpp"
#include "common/input_error.hpp"
#include "common/input_file.hpp"
#include "common/output_set.hpp"
#include "exec/cpu/cpu_run.hpp"
#include "exec/cpu/diverged.hpp"
#include "scenarios/scenario.hpp"

#ifdef TANDEM_HAVE_CUDA
#include "exec/cuda/cuda_run.hpp"
#endif
#ifdef TANDEM_HAVE_MPI
#include "distributed/mpi_cpu_run.hpp"
#endif

namespace tandem::cli {

CLI::App* add_run_command(CLI::App& app, RunCommandOptions& o) {
  CLI::App* cmd = app.add_subcommand("run", "train a scenario for real and measure every op");
  cmd->add_option("scenario", o.scenario, "scenario file, or the name of a bundled scenario")->required();
  cmd->add_option("--backend", o.backend, "execution backend: cpu, or cuda (one process per GPU; mpirun -np N)");
  cmd->add_option("--iterations", o.iterations, "training iterations (default 10)")->check(in_range(limits::kIterations));
  cmd->add_option("--warmup", o.warmup, "warm-up iterations before measuring")->check(in_range(limits::kWarmupIterations));
  cmd->add_option("--seed", o.seed, "seed of the initial parameters and dropout");
  cmd->add_option("--timeout", o.timeout_s, "seconds any rank may wait for its peers before the run fails")
      ->check(in_range(kTimeoutS));
  cmd->add_option("--trace", o.trace_path, "write the measured trace (Tandem schema) to FILE");
  cmd->add_option("--chrome-trace", o.chrome_trace_path, "write a Chrome-trace/Perfetto timeline to FILE");
  cmd->add_option("--trace-ranks", o.trace_ranks, "only these ranks in the traces: 0-7,32 (default: all)");
  cmd->add_option("--json", o.json_path, "write the summary as JSON to FILE ('-' for stdout)");
  cmd->add_option("--checkpoint", o.checkpoint_path, "save the full training state to FILE at the end (atomically)");
  cmd->add_option("--checkpoint-every", o.checkpoint_every, "also save it every N iterations")
      ->check(in_range(limits::kIterations));
  cmd->add_option("--resume", o.resume_path, "continue training from the checkpoint FILE");
  cmd->add_option("--rebalance-after", o.rebalance_after,
                  "after K iterations, re-split the batch over the replicas by their measured speeds and train "
                  "the rest so (cpu backend)")
      ->check(in_range(limits::kIterations));
  cmd->add_option("--corpus", o.corpus_path,
                  "train a language model on this text file, its bytes the tokens (default: a generated "
                  "English-like text)");
  cmd->add_flag("--elastic", o.elastic,
                 "ranks as processes (mpirun) under a supervisor: a rank that dies or stops beating is replaced "
                 "from --checkpoint, on a spare or with a re-planned strategy for the survivors (cpu backend)");
  cmd->add_option("--spares", o.spares, "with --elastic: spare devices to restart on before shrinking")
      ->check(CLI::Range(0, 1000));
  cmd->add_option("--heartbeat-timeout", o.heartbeat_timeout_s,
                  "with --elastic: seconds a rank may go without finishing an iteration before it counts as failed")
      ->check(CLI::Range(0.1, 1e6));
  cmd->add_option("--replan", o.replan,
                  "with --elastic, the survivors' plan: shrink (the scenario's, fewer data-parallel replicas) or "
                  "search (the strategy search's best for their devices)")
      ->check(CLI::IsMember({"shrink", "search"}));
  cmd->add_option("--repair-after", o.repair_after,
                  "with --elastic: iterations after a shrink until the lost devices are back (repaired); the job "
                  "then grows back to the scenario's plan from its next checkpoint (default: never)")
      ->check(CLI::Range(1, 100000000));
  cmd->add_option("--slow-rank", o.slow_ranks,
                  "R:F makes rank R a straggler: its kernels take F (>= 1) times as long (repeatable; the "
                  "scenario's stragglers: section does the same)");
  cmd->footer("Exit status: 0 trained; 2 bad input (file, line, field); 3 training diverged (a NaN or "
              "infinite loss: the iteration and rank are named); 1 any other failure; 128+N stopped by signal N.");
  return cmd;
}

std::shared_ptr<const exec::cpu::DataSource> corpus_source(const std::string& path, const Scenario& scenario) {
  if (scenario.model.kind != ModelSpec::Kind::transformer)
    throw InputError("command line", 0, "--corpus", "a corpus feeds language models; " + scenario.name + "'s model reads no text");
  std::string text;
  try {
    text = read_input_file(path, kMaxCorpusBytes);
  } catch (const InputError& e) {
    throw InputError("command line", 0, "--corpus", e.what());
  }
  const auto needed = static_cast<std::size_t>(scenario.training.seq_length) + 2;
  if (text.size() < needed)
    throw InputError("command line", 0, "--corpus",
                     path + " has " + std::to_string(text.size()) + " bytes: a sequence of " +
                         std::to_string(scenario.training.seq_length) + " and its next token need at least " +
                         std::to_string(needed));
  return std::make_shared<exec::cpu::TextCorpus>(scenario.model.transformer.vocab_size, std::move(text));
}

namespace {

#ifdef TANDEM_HAVE_MPI
using distributed::launched_cpu_processes;
using distributed::launched_process_rank;
using distributed::finish_processes;
using distributed::run_cpu_processes;
using distributed::start_processes;
#else
void finish_processes() {}
void start_processes() {}
int launched_cpu_processes() { return 0; }  // without MPI: never ranks as processes
int launched_process_rank() { return 0; }
exec::cpu::RunResult run_cpu_processes(const Strategy&, const exec::cpu::RunOptions&) {
  throw std::logic_error("ranks as processes need MPI, which this build has not");
}
#endif

// std::cout into nothing while it lives.
class SilencedOutput {
 public:
  SilencedOutput() : saved_(std::cout.rdbuf(nullptr)) {}
  ~SilencedOutput() { std::cout.rdbuf(saved_); }
  SilencedOutput(const SilencedOutput&) = delete;
  SilencedOutput& operator=(const SilencedOutput&) = delete;

 private:
  std::streambuf* saved_;
};

// Per-rank compute slowdowns (RunOptions::compute_slowdown): the scenario's stragglers (their
// drawn values, as `simulate` uses them) and --slow-rank R:F, which wins for its rank.
std::vector<double> injected_slowdowns(const Scenario& scenario, const std::vector<std::string>& slow_ranks, int world) {
  std::vector<double> slowdown(static_cast<std::size_t>(world), 1.0);
  for (std::size_t i = 0; i < scenario.stragglers.size(); ++i) {
    const StragglerSpec& spec = scenario.stragglers[i];
    if (spec.bandwidth_min != 1 || spec.bandwidth_max != 1)
      throw InputError(spec.file, spec.line, spec.field + ".network_bandwidth_fraction",
                       "the cpu backend cannot slow a link (its ranks talk through shared memory): simulate it");
  }
  for (const auto& s : scenario.simulation.stragglers)
    if (s.rank < world) slowdown[static_cast<std::size_t>(s.rank)] = s.compute_slowdown;
  std::vector<bool> injected(static_cast<std::size_t>(world), false);
  for (const std::string& text : slow_ranks) {
    const auto colon = text.find(':');
    int rank = -1;
    double factor = 0;
    try {
      std::size_t used = 0;
      if (colon != std::string::npos) {
        rank = std::stoi(text.substr(0, colon), &used);
        if (used != colon) rank = -1;
        factor = std::stod(text.substr(colon + 1), &used);
        if (used != text.size() - colon - 1) factor = 0;
      }
    } catch (const std::exception&) {
      rank = -1;
    }
    if (rank < 0 || rank >= world || !(factor >= 1 && factor <= 1000))
      throw InputError("command line", 0, "--slow-rank",
                       "'" + text + "': expected RANK:FACTOR with a rank below " + std::to_string(world) +
                           " and a factor in [1, 1000]");
    // Two factors for one rank: which was meant is a guess, so neither is taken.
    if (injected[static_cast<std::size_t>(rank)])
      throw InputError("command line", 0, "--slow-rank", "'" + text + "': rank " + std::to_string(rank) + " is slowed twice");
    injected[static_cast<std::size_t>(rank)] = true;
    slowdown[static_cast<std::size_t>(rank)] = factor;
  }
  return slowdown;
}

}  // namespace

int run_run(const RunCommandOptions& o) {
  if (o.elastic) {
    ElasticOptions elastic;
    elastic.spares = o.spares;
    elastic.heartbeat_timeout_s = o.heartbeat_timeout_s;
    elastic.replan_by_search = o.replan == "search";
    elastic.repair_after = o.repair_after;
    return run_elastic(o, elastic);
  }
  if (o.spares != 0 || o.replan != "shrink" || o.heartbeat_timeout_s != ElasticOptions{}.heartbeat_timeout_s ||
      o.repair_after != 0)
    throw InputError("command line", 0,
                     o.spares != 0              ? "--spares"
                     : o.replan != "shrink"     ? "--replan"
                     : o.repair_after != 0      ? "--repair-after"
                                                : "--heartbeat-timeout",
                     "belongs to --elastic runs");
#ifdef TANDEM_HAVE_CUDA
  const char* available = "cpu, cuda";
#else
  const char* available = "cpu (built without a CUDA toolkit)";
#endif
  const bool cuda = o.backend == "cuda";
#ifdef TANDEM_HAVE_CUDA
  if (o.backend != "cpu" && !cuda)
#else
  if (o.backend != "cpu")
#endif
    throw InputError("command line", 0, "--backend",
                     "backend '" + o.backend + "' is not available (this build runs: " + available + ")");
  // The files named on the command line are checked before any device is probed: a user on a
  // machine without a GPU hears about a bad path first, as one with a GPU does.
  OutputSet outputs;
  OutputSet::check_writable(o.json_path, "--json");
  OutputSet::check_writable(o.trace_path, "--trace");
  OutputSet::check_writable(o.chrome_trace_path, "--chrome-trace");
  OutputSet::check_writable(o.checkpoint_path, "--checkpoint");
  if (!o.resume_path.empty()) check_input_file(o.resume_path, kMaxCheckpointBytes);
#ifdef TANDEM_HAVE_CUDA
  if (cuda && exec::cuda::cuda_device_count() < 1)
    throw InputError("command line", 0, "--backend", "backend 'cuda': no CUDA device is visible to this process");
#endif
  Scenario scenario = load_scenario(o.scenario);
  // This machine's cores as devices: one node of CPU devices (localhost, or a calibrated copy of
  // it under any name: `tandem calibrate --cluster-out` writes one where it is told).
  if (!cuda && !is_this_machine(scenario.cluster))
    scenario.fail("cluster", "the cpu backend runs on one node of cpu devices (this machine's cores, as "
                             "'localhost' or a calibrated cluster), not on '" + scenario.cluster.name + "' (" +
                             std::to_string(scenario.cluster.node_count()) + " node(s) of " +
                             scenario.cluster.groups.front().device.kind + " devices)");
  auto strategy = make_strategy(scenario);
  const TraceOutputs traces{o.trace_path, o.chrome_trace_path, o.trace_ranks};
  check_trace_outputs(traces, strategy->world_size());
  auto model = make_model(scenario.model);
#ifdef TANDEM_HAVE_CUDA
  if (cuda && strategy->world_size() != exec::cuda::launched_processes())
    throw InputError("command line", 0, "--backend",
                     "the cuda backend runs one process per GPU: this strategy has " +
                         std::to_string(strategy->world_size()) + " rank(s), launch it with mpirun -np " +
                         std::to_string(strategy->world_size()) + " (" +
                         std::to_string(exec::cuda::launched_processes()) + " process(es) were launched)");
#endif

  // Under mpirun, the cpu backend's ranks are the launched processes (one rank each).
  const int cpu_processes = cuda ? 0 : launched_cpu_processes();
  const bool processes = cpu_processes > 0;
  if (processes) {
    start_processes();
    if (strategy->world_size() != cpu_processes)
      throw InputError("command line", 0, "--backend",
                       "under mpirun the cpu backend runs one rank per process: this strategy has " +
                           std::to_string(strategy->world_size()) + " rank(s) and " + std::to_string(cpu_processes) +
                           " process(es) were launched (mpirun -np " + std::to_string(strategy->world_size()) + ")");
  }
  // Only the first process speaks: the others' output would repeat it.
  std::optional<SilencedOutput> silenced;
  if (processes && launched_process_rank() != 0) silenced.emplace();

  exec::cpu::RunOptions options;
  if (o.seed) options.seed = *o.seed;
  exec::cpu::configure_for_model(options, *model, scenario.training.seq_length);
  if (!o.corpus_path.empty()) options.data = corpus_source(o.corpus_path, scenario);
  options.iterations = o.iterations.value_or(10);
  options.warmup_iterations = o.warmup.value_or(0);
  if (o.timeout_s) options.timeout_s = *o.timeout_s;
  if (o.checkpoint_every && o.checkpoint_path.empty())
    throw InputError("command line", 0, "--checkpoint-every", "needs --checkpoint FILE");
  options.checkpoint_path = o.checkpoint_path;
  options.checkpoint_every = o.checkpoint_every.value_or(0);
  options.resume_path = o.resume_path;
  options.record_trace = !o.trace_path.empty() || !o.chrome_trace_path.empty();
  options.compute_slowdown = injected_slowdowns(scenario, o.slow_ranks, strategy->world_size());
  if (cuda && std::any_of(options.compute_slowdown.begin(), options.compute_slowdown.end(), [](double f) { return f != 1; }))
    throw InputError("command line", 0, "--slow-rank", "straggler injection is built for the cpu backend only");
  if (cuda && scenario.parallel.offload_optimizer)
    scenario.fail("strategy.offload_optimizer",
                  "the cuda backend keeps every tensor in device memory: offloading runs on the cpu backend (and "
                  "is simulated)");
  const bool quiet = o.json_path == "-";
  if (!quiet) {
    std::cout << "scenario    " << scenario.name << "\n"
              << "strategy    " << strategy->name() << " on " << strategy->world_size()
              << (cuda ? " GPU rank(s)\n" : " CPU rank(s)\n")
              << "model       " << model->describe().name << " (" << model->describe().parameter_count
              << " parameters)\n";
    for (std::size_t r = 0; r < options.compute_slowdown.size(); ++r)
      if (options.compute_slowdown[r] != 1)
        std::cout << "straggler   rank " << r << ": compute x" << options.compute_slowdown[r] << " (injected)\n";
    options.on_iteration = [watch = std::make_shared<StragglerWatch>(StragglerWatch::classes_of(strategy->rank_roles()))](
                               const exec::cpu::IterationStats& s) {
      char line[160];
      std::snprintf(line, sizeof line, "iter %4d%s  loss %8.4f  time %8.4f s  %10.0f tokens/s\n",
                    s.iteration, s.warmup ? " (warm-up)" : "", s.loss, s.time_s, s.tokens_per_s);
      std::cout << line;
      if (const auto flagged = watch->observe(s)) std::cout << *flagged;
      std::cout << std::flush;
    };
  }

#ifdef TANDEM_HAVE_CUDA
  exec::cuda::CudaRunExtras extras;
  extras.math = scenario.training.precision == DType::fp32 ? kernels::cuda::MathMode::fp32 : kernels::cuda::MathMode::bf16;
#endif
  if (o.rebalance_after && (cuda || *o.rebalance_after >= options.iterations))
    throw InputError("command line", 0, "--rebalance-after",
                     cuda ? "re-balancing is built for the cpu backend only" : "needs iterations after it: K below --iterations");
  exec::cpu::RunResult result;
  std::optional<RebalancedRun> rebalanced;
  try {
#ifdef TANDEM_HAVE_CUDA
    if (cuda) result = exec::cuda::run_cuda(*strategy, options, extras);
    else
#endif
    {
      // Ranks as processes (under mpirun) or as threads; re-balanced in two parts on request.
      const CpuRunner runner = processes ? CpuRunner(run_cpu_processes) : CpuRunner(exec::cpu::run_cpu);
      if (o.rebalance_after)
        rebalanced = run_rebalanced(scenario, *strategy, options, *o.rebalance_after, runner,
                                    processes ? static_cast<long>(::getppid()) : static_cast<long>(::getpid()),
                                    quiet ? nullptr : &std::cout);
      else result = runner(*strategy, options);
      if (processes) finish_processes();
    }
    if (rebalanced) result = rebalanced->after;
  } catch (const exec::cpu::DivergedError& e) {
    std::cerr << "tandem: " << e.what() << "\n";
    return kExitDiverged;
  } catch (const StrategyError& e) {
    // What the backend cannot run of the strategy (asynchronous servers' checkpoints), at its field.
    scenario.fail(e.field(), e.what());
  }

  const nlohmann::json summary = [&] {
#ifdef TANDEM_HAVE_CUDA
    nlohmann::json j = cuda ? exec::cuda::to_json(result, extras) : exec::cpu::to_json(result);
#else
    nlohmann::json j = exec::cpu::to_json(result);
#endif
    j["scenario"] = scenario.name;
    j["model"] = model->describe().name;
    if (rebalanced)
      j["rebalance"] = {{"after_iterations", *o.rebalance_after},
                        {"micro_batches_before", rebalanced->micro_batches_before},
                        {"micro_batches_after", rebalanced->micro_batches_after},
                        {"measured_before_s", rebalanced->before.iteration_time_s},
                        {"measured_after_s", rebalanced->after.iteration_time_s},
                        {"predicted_before_s", rebalanced->predicted.before_s},
                        {"predicted_after_s", rebalanced->predicted.after_s}};
    if (rebalanced && !rebalanced->layers_after.empty()) {
      j["rebalance"]["layers_per_stage_before"] = rebalanced->layers_before;
      j["rebalance"]["layers_per_stage_after"] = rebalanced->layers_after;
    }
    if (rebalanced && !rebalanced->chosen.empty()) {
      j["rebalance"]["chosen"] = rebalanced->chosen;
      j["rebalance"]["predicted_other_s"] = rebalanced->predicted_other_s;
    }
    // Stragglers that come and go are `goodput`'s; this run is between their episodes. Said, not
    // silently dropped.
    for (const StragglerSpec& s : transient_stragglers(scenario.stragglers))
      j["not_injected"].push_back(s.field + " (line " + std::to_string(s.line) + "): comes and goes (episodes)");
    return j;
  }();
  Trace trace = result.trace;
  trace.scenario = scenario.name;
  // Stragglers (with a trace only): ranks computing slower than their peers beyond the noise,
  // found before the trace moves into the outputs (which fill the same ranks' places again).
  std::string anomalies;
  if (!quiet && !trace.records.empty()) {
    trace.ranks = trace_ranks(scenario.cluster, strategy->world_size(), strategy->rank_roles());
    anomalies = to_text(find_anomalies(trace));
  }
  if (silenced) return 0;  // the first process writes the outputs
  if (!o.json_path.empty() && !quiet) outputs.stage(o.json_path, summary.dump(2) + "\n");
  stage_trace_outputs(outputs, std::move(trace), scenario.cluster, *strategy, traces);
  outputs.commit();
  if (quiet) {
    std::cout << summary.dump(2) << "\n";
    return 0;
  }
  char line[200];
  std::snprintf(line, sizeof line, "mean        %.4f s/iteration, %.0f tokens/s\n", result.iteration_time_s,
                result.tokens_per_s);
  std::cout << line;
  const int steps = std::max<int>(1, static_cast<int>(result.iterations.size()));
  for (std::size_t r = 0; r < result.ranks.size(); ++r) {
    std::snprintf(line, sizeof line, "rank %-4zu   compute %.4f s/iteration, peak memory %.2f MiB\n", r,
                  result.ranks[r].compute_s / steps, result.ranks[r].peak_memory_bytes / (1024.0 * 1024.0));
    std::cout << line;
  }
  if (result.router_load.routings > 0) {
    char router[320];
    std::snprintf(router, sizeof router,
                  "router load the busiest expert %.3fx the mean, on average over %lld routings (largest %.3fx): "
                  "model.moe_router_load_imbalance prices dropless routing with it\n",
                  result.router_load.mean_ratio(), static_cast<long long>(result.router_load.routings),
                  result.router_load.ratio_max);
    std::cout << router;
  }
  if (!anomalies.empty()) std::cout << "anomalies\n" << anomalies;
  if (rebalanced) std::cout << rebalanced->report;
  if (summary.contains("not_injected"))
    for (const auto& s : summary["not_injected"])
      std::cout << "straggler   " << s.get<std::string>() << ": not injected (tandem goodput plays its episodes)\n";
  if (!o.checkpoint_path.empty()) std::cout << "checkpoint  " << o.checkpoint_path << "\n";
  if (!o.trace_path.empty()) std::cout << "trace       " << o.trace_path << "\n";
  if (!o.chrome_trace_path.empty()) std::cout << "timeline    " << o.chrome_trace_path << "\n";
  return 0;
}

}  // namespace tandem::cli
