#include "sim/simulation.hpp"

#include <set>

#include <simgrid/plugins/energy.h>
#include <simgrid/s4u.hpp>
#include <xbt/log.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <memory>
#include <stdexcept>

#include "analysis/iteration_view.hpp"
#include "common/checked_math.hpp"
#include "sim/core_contention.hpp"
#include "sim/pipeline_extrapolation.hpp"
#include "sim/platform_builder.hpp"
#include "sim/sim_device.hpp"
#include "sim/storage_traffic.hpp"
#include "sim/tensor_folding.hpp"

namespace tandem::sim {

namespace s4u = simgrid::s4u;

namespace {

// One engine per process, configured for a model whose parameters we set ourselves: the
// network factors that bend times on purpose (SIMGRID-NOTES.md) are neutralised, so a transfer
// takes exactly latency + bytes / bandwidth, with contention from the max-min sharing model.
s4u::Engine& make_engine() {
  static int argc = 1;
  static char name[] = "tandem";
  static char* argv[] = {name, nullptr};
  static bool created = false;
  if (created) throw std::logic_error("simulate() runs once per process (one SimGrid engine per process)");
  created = true;
  auto* engine = new s4u::Engine(&argc, argv);  // lives until the process ends, as SimGrid expects
  xbt_log_control_set("root.thres:critical");
  use_neutral_network_model();
#if defined(__SANITIZE_THREAD__)
  // Under ThreadSanitizer (tests/sanitize.sh tsan) every actor is a real thread: SimGrid's own
  // context switches (raw/boost stacks swapped by hand) are invisible to TSan, which then reports
  // races between actors that never run at once. Threads hand over through SimGrid's semaphores,
  // which TSan follows, so the simulator's code is checked like the CPU backend's. Instrumented
  // frames are larger: 1 MiB stacks.
  s4u::Engine::set_config("contexts/factory:thread");
  s4u::Engine::set_config("contexts/stack-size:1024");
#else
  s4u::Engine::set_config("contexts/stack-size:256");
#endif
  sg_host_energy_plugin_init();
  return *engine;
}

struct RankOutcome {
  std::unique_ptr<SimDevice> device;
  bool finished = false;
  std::string error;
};

void check_simulation(const Strategy& strategy, const Cluster& cluster, const SimulationOptions& options) {
  const int world = strategy.world_size();
  if (world > cluster.device_count())
    throw std::invalid_argument("strategy needs " + std::to_string(world) + " devices, cluster '" +
                                cluster.name + "' has " + std::to_string(cluster.device_count()));
  if (options.iterations < 1) throw std::invalid_argument("at least one measured iteration");
  if (options.warmup_iterations < 0) throw std::invalid_argument("negative warm-up iterations");
}

// Storage writes alone (a synchronous checkpoint: training stopped): the writers on the job's
// devices, nothing else.
SimulationResult simulate_storage_alone(const Cluster& cluster, int world, const SimulationOptions& options) {
  const auto wall_start = std::chrono::steady_clock::now();
  const StorageEndpoint endpoint{options.storage_writes->bandwidth_bytes_per_s, 0};
  const BuiltPlatform platform = build_platform(cluster, &endpoint);
  const std::vector<s4u::Host*> hosts(platform.hosts.begin(), platform.hosts.begin() + world);
  StorageWriters writers(hosts, platform.storage, *options.storage_writes, /*start_now=*/true);
  s4u::Engine::get_instance()->run();
  SimulationResult result;
  result.storage_write_s = writers.write_s();
  result.wall_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return result;
}

// The simulation itself, in this process; `note` (how the pipeline was treated) joins the
// folding notes.
SimulationResult simulate_here(const Strategy& strategy, const Cluster& cluster, const SimulationOptions& options,
                               const std::string& note) {
  const auto wall_start = std::chrono::steady_clock::now();
  const int world = strategy.world_size();
  s4u::Engine& engine = make_engine();
  std::optional<StorageEndpoint> storage;
  if (options.storage_writes)
    storage = StorageEndpoint{options.storage_writes->bandwidth_bytes_per_s, 0};  // latency: once, by the writers
  if (options.storage_writes && options.storage_writes->alone) return simulate_storage_alone(cluster, world, options);
  // A straggler makes its replica and tensor group unlike the others: nothing is mirrored.
  // (Storage writes leave replicas alike: every device, ghosts included, writes its shard, so the
  // storage's link carries them all, and a simulated rank's NIC carries its own beside training.)
  const bool stragglers = !options.stragglers.empty();
  // Ranks that offload to their node's host share it (its CPU, and their PCIe links with their
  // NICs): a ghost's share would be missing, so nothing is mirrored.
  const bool host = strategy.uses_host();
  const bool unalike = stragglers || host;
  FoldPlan fold = plan_replica_folding(strategy, cluster, unalike ? FoldingMode::off : options.replica_folding,
                                       options.record_trace);
  plan_tensor_folding(strategy, cluster, unalike ? FoldingMode::off : options.tensor_folding, options.record_trace,
                      fold);
  if (stragglers) fold.note += " (stragglers: ranks differ)";
  if (host) fold.note += " (ranks share their node's host)";
  SimulationContext context;
  context.cluster = &cluster;
  context.options = options;
  context.fold = &fold;
  BuiltPlatform platform = build_platform(cluster, storage ? &*storage : nullptr, host);
  context.hosts.assign(platform.hosts.begin(), platform.hosts.begin() + world);
  context.node_hosts = platform.node_hosts;
  std::optional<StorageWriters> writers;
  // The writes start with the first measured iteration, so that the measured ones run beside them.
  if (storage) writers.emplace(context.hosts, platform.storage, *options.storage_writes, /*start_now=*/false);
  int ranks_running = 0;
  reliability::apply_stragglers(options.stragglers, cluster, context.hosts);
  context.topology = topology_view(cluster);

  // 0. Ranks that outnumber a machine's cores take turns on them (core_turns.hpp); ranks that
  //    leave cores idle run their kernels faster than calibrated with every core busy
  //    (core_contention.hpp).
  {
    std::map<std::string, int> ranks;  // per shared-cores machine
    std::map<std::string, int> first_rank;
    for (int r = 0; r < world; ++r)
      if (const char* name = context.hosts[r]->get_property(kComputeHostProperty)) {
        ++ranks[name];
        first_rank.try_emplace(name, r);
      }
    for (const auto& [name, count] : ranks) {
      s4u::Host* cores_host = s4u::Host::by_name(name);
      const int cores = cores_host->get_core_count();
      if (count > cores) context.core_turns[name] = std::make_unique<CoreTurns>(cores, world);
      const double load = std::stod(cores_host->get_property(kBackgroundLoadProperty));
      context.kernel_time_factor[name] =
          kernel_time_factor(cluster.device_of(first_rank.at(name)), cores, count, load);
    }
  }

  // 0b. Other programs on shared cores take `background_load` cores' worth, whatever the number
  //    of ranks (Linux shares the CPU between sessions first): kBackgroundThreads daemons, each
  //    capped at load / kBackgroundThreads, so that max-min sharing gives them exactly the load
  //    while the ranks share the rest (as long as ranks <= kBackgroundThreads x rest / load).
  //    They are killed when the ranks are done.
  constexpr int kBackgroundThreads = 16;
  std::set<std::string> loaded;
  for (s4u::Host* host : context.hosts) {
    const char* cores_name = host->get_property(kComputeHostProperty);
    if (cores_name == nullptr || !loaded.insert(cores_name).second) continue;
    s4u::Host* cores = s4u::Host::by_name(cores_name);
    const double load = std::stod(cores->get_property(kBackgroundLoadProperty));
    if (!(load > 0)) continue;
    const double bound = std::min(1.0, load / kBackgroundThreads) * kSimHostSpeedFlopsPerS;
    for (int i = 0; i < kBackgroundThreads; ++i) {
      s4u::Actor::create("background", host, [cores, bound] {
        while (true) {
          s4u::ExecPtr exec = s4u::this_actor::exec_init(1e6 * kSimHostSpeedFlopsPerS);
          exec->set_host(cores);
          exec->set_bound(bound);
          exec->wait();
        }
      })->daemonize();
    }
  }

  // 1. One actor per simulated device runs that rank's program (every device, unless replicas
  //    are folded: then ghosts have a host on the platform but no actor).
  std::vector<RankOutcome> outcomes(world);
  // Ranks taking turns on cores reach a steady state only while every rank has a next iteration
  // to compete for the cores with: the last iteration runs alone as the others finish (shorter).
  // One more iteration is simulated, and not measured, whenever ranks outnumber cores.
  const bool turns = !context.core_turns.empty();
  const int measured_end = checked_add(options.warmup_iterations, options.iterations, "warm-up + measured iterations");
  const int total_iterations = measured_end + (turns ? 1 : 0);
  for (int r = 0; r < world; ++r) {
    if (!fold.simulated(r)) continue;
    ++ranks_running;
    s4u::Actor::create("rank" + std::to_string(r), context.hosts[r], [&, r] {
      RankOutcome& out = outcomes[r];
      try {
        out.device = std::make_unique<SimDevice>(r, context);
        auto program = strategy.program_for(r);
        program->plan_iterations(0, total_iterations);
        program->setup(*out.device);
        for (int it = 0; it < total_iterations; ++it) {
          if (writers && it == options.warmup_iterations) writers->start();  // the first rank there
          out.device->begin_iteration(it);
          program->train_step(*out.device, it);
          out.device->end_iteration();
        }
        out.device->leave_cores();
        out.finished = true;
        if (writers && --ranks_running == 0) writers->training_ended();
      } catch (const simgrid::ForcefulKillException&) {
        throw;  // another rank failed and stopped the simulation
      } catch (const std::exception& e) {
        out.error = e.what();
        s4u::Actor::kill_all();
      }
    });
  }

  // 2. Run until every rank is done (or blocked forever).
  engine.run();

  for (int r = 0; r < world; ++r)
    if (!outcomes[r].error.empty())
      throw std::runtime_error("rank " + std::to_string(r) + " failed: " + outcomes[r].error);
  std::vector<int> stuck;
  for (int r = 0; r < world; ++r)
    if (fold.simulated(r) && !outcomes[r].finished) stuck.push_back(r);
  if (!stuck.empty()) {
    std::string list;
    for (std::size_t i = 0; i < std::min<std::size_t>(stuck.size(), 8); ++i)
      list += (i ? ", " : "") + std::to_string(stuck[i]);
    throw std::runtime_error("simulation deadlocked: " + std::to_string(stuck.size()) +
                             " rank(s) never finished (" + list +
                             (stuck.size() > 8 ? ", ..." : "") +
                             "): their communication has no matching peer");
  }

  // 3. Gather: iteration times over all ranks, each rank's breakdown, memory, energy, trace. A
  //    ghost's figures are those of the rank it mirrors.
  SimulationResult result;
  result.simulated_ranks = fold.simulated_ranks();
  if (writers) result.storage_write_s = writers->write_s();
  result.folding = fold.note + "; " + fold.tensor_note + (note.empty() ? "" : "; " + note);
  const auto device_of = [&](int r) -> SimDevice& { return *outcomes[fold.mirror_of[r]].device; };
  // An iteration's time is the period training advances by, as the real backends measure it
  // (analysis/iteration_view.hpp): ranks that take turns on shared cores start an iteration at
  // staggered times, so an iteration's own window overlaps the next one's.
  std::vector<IterationSpan> spans;
  for (int i = 0; i < measured_end; ++i) {
    IterationSpan span{i, device_of(0).iteration_windows()[i].first, 0};
    for (int r = 0; r < world; ++r) {
      if (!fold.simulated(r)) continue;
      span.start_s = std::min(span.start_s, device_of(r).iteration_windows()[i].first);
      span.end_s = std::max(span.end_s, device_of(r).iteration_windows()[i].second);
    }
    spans.push_back(span);
  }
  const std::vector<Seconds> periods = iteration_periods_s(spans);
  result.iteration_times_s.assign(periods.begin() + options.warmup_iterations, periods.end());
  Seconds measured_s = 0;
  for (Seconds t : result.iteration_times_s) measured_s += t;
  result.iteration_time_s = measured_s / options.iterations;

  Joules energy = 0;
  for (int r = 0; r < world; ++r) {
    SimDevice& dev = device_of(r);
    RankResult rr = dev.totals();
    rr.idle_s = std::max(0.0, measured_s - rr.compute_s - rr.exposed_comm_s);
    rr.peak_memory_bytes = dev.memory().peak();
    rr.memory_at_peak = dev.memory().at_peak();
    rr.out_of_memory = rr.peak_memory_bytes > cluster.device_of(r).memory_capacity_bytes;
    rr.host_peak_bytes = dev.memory().host_peak();
    rr.energy_j = dev.shares_cores() ? sg_host_get_consumed_energy(context.hosts[fold.mirror_of[r]])
                                     : dev.energy_j(s4u::Engine::get_clock());
    energy += rr.energy_j;
    result.ranks.push_back(rr);
    if (!fold.simulated(r)) continue;
    result.compute_executions += dev.compute_executions();
    result.compute_ops += dev.compute_ops();
    result.comm_ops += dev.comm_ops();
    if (options.record_trace) {
      auto& records = dev.trace_records();
      result.trace.records.insert(result.trace.records.end(), std::make_move_iterator(records.begin()),
                                  std::make_move_iterator(records.end()));
    }
  }
  result.energy_per_iteration_j = energy / total_iterations;  // (every simulated iteration used energy)
  result.trace.source = "sim";
  result.wall_time_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return result;
}

}  // namespace

SimulationResult simulate(const Strategy& strategy, const Cluster& cluster, const SimulationOptions& requested) {
  // Whole periods of the strategy's iterations (local SGD averages every H steps), so that the
  // mean iteration holds its share of the periodic work.
  SimulationOptions options = requested;
  const long long period = std::max(1, strategy.iteration_period());
  const long long iterations = (options.iterations + period - 1) / period * period;
  if (iterations > std::numeric_limits<int>::max())
    throw std::invalid_argument("the strategy repeats every " + std::to_string(period) + " iterations: too many to simulate");
  options.iterations = static_cast<int>(iterations);
  // A steady iteration: the first ones, unlike the rest, are not measured.
  // (A negative warm-up stays as it is, for check_simulation to refuse.)
  std::string warmup_note;
  if (options.warmup_iterations >= 0 && strategy.irregular_iterations() > options.warmup_iterations) {
    options.warmup_iterations = strategy.irregular_iterations();
    // Said beside the folding notes: the measured iteration is not the first.
    const std::string n = std::to_string(options.warmup_iterations);
    warmup_note = options.warmup_iterations == 1
                      ? "measured after 1 warm-up iteration (the strategy's first differs from its steady ones)"
                      : "measured after " + n + " warm-up iterations (the strategy's first " + n +
                            " differ from its steady ones)";
  }
  check_simulation(strategy, cluster, options);
  // Storage writes run beside the whole run, not beside shorter ones: no extrapolation then.
  if (options.storage_writes) options.pipeline_extrapolation = FoldingMode::off;
  ExtrapolationPlan plan = plan_pipeline_extrapolation(strategy, cluster, options);
  if (plan.apply) {
    const auto wall_start = std::chrono::steady_clock::now();
    SimulationOptions shorter = options;
    shorter.pipeline_extrapolation = FoldingMode::off;
    // The warm-up note rides on the longer run's notes, which the extrapolated result keeps.
    const auto simulate_one = [&](const Strategy& s) { return simulate_here(s, cluster, shorter, warmup_note); };
    if (std::optional<SimulationResult> result = simulate_extrapolated(strategy, plan, simulate_one)) {
      result->wall_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
      return std::move(*result);
    }
    plan.note = "no pipeline extrapolation: peak memory differs between " + std::to_string(plan.shorter) + " and " +
                std::to_string(plan.longer) + " micro-batches";
  }
  const std::string note = plan.note.empty() || warmup_note.empty() ? plan.note + warmup_note
                                                                     : plan.note + "; " + warmup_note;
  return simulate_here(strategy, cluster, options, note);
}

}  // namespace tandem::sim
