#include "scenarios/goodput_inputs.hpp"

#include <algorithm>
#include <cstdio>
#include <string>
#include <set>

#include "common/process_pool.hpp"
#include "common/usable_cores.hpp"
#include "scenarios/layer_resplit.hpp"
#include "scenarios/scenario.hpp"
#include "sim/reliability/checkpoint_cost.hpp"
#include "sim/reliability/restart_cost.hpp"
#include "sim/reliability/checkpoint_interval.hpp"
#include "sim/reliability/random_stream.hpp"
#include "sim/simulation.hpp"

namespace tandem {

sim::reliability::JobShape job_shape(const Cluster& cluster, int world) {
  std::set<int> nodes, leaves;
  for (int r = 0; r < world; ++r) {
    nodes.insert(cluster.global_node_of(r));
    leaves.insert(cluster.leaf_of_node(cluster.global_node_of(r)));
  }
  sim::reliability::JobShape job;
  job.devices = world;
  job.nodes = static_cast<int>(nodes.size());
  job.leaf_switches = static_cast<int>(leaves.size());
  job.nodes_per_leaf = (job.nodes + job.leaf_switches - 1) / job.leaf_switches;
  return job;
}

namespace {

// The slowest path into storage among the job's nodes: its NICs (the scenario may say less).
BytesPerSecond node_storage_bytes_per_s(const Cluster& cluster, int world) {
  BytesPerSecond slowest = 0;
  for (int r = 0; r < world; ++r) {
    const BytesPerSecond uplink = cluster.node_uplink_bytes_per_s(cluster.global_node_of(r));
    if (uplink > 0) slowest = slowest == 0 ? uplink : std::min(slowest, uplink);
  }
  return slowest;
}

}  // namespace

Bytes snapshot_bytes(const MemoryUsage& at_peak) {
  return at_peak.by_category[static_cast<std::size_t>(MemCategory::parameters)] +
         at_peak.by_category[static_cast<std::size_t>(MemCategory::optimizer_state)];
}

GoodputSetup goodput_setup(const ReliabilityScenario& scenario, const Strategy& strategy,
                           const sim::SimulationResult& iteration, const SimulatedStorage* storage) {
  Bytes snapshot_bytes_per_device = 0;
  for (const sim::RankResult& rank : iteration.ranks)
    snapshot_bytes_per_device = std::max(snapshot_bytes_per_device, snapshot_bytes(rank.memory_at_peak));
  return goodput_setup(scenario, strategy, iteration.iteration_time_s, snapshot_bytes_per_device, storage);
}

std::optional<SimulatedStorage> simulate_storage(const ReliabilityScenario& scenario, const Strategy& strategy,
                                                 const sim::SimulationOptions& options) {
  const Scenario& base = scenario.base;
  const ReliabilitySpec& spec = scenario.spec;
  const int world = strategy.world_size();
  if (job_shape(base.cluster, world).nodes < 2) return std::nullopt;
  sim::StorageWrites writes;
  writes.bandwidth_bytes_per_s = spec.storage.aggregate_bytes_per_s * (1 - spec.storage.background_load);
  writes.latency_s = spec.storage.latency_s;
  writes.bytes_per_rank =
      sim::reliability::checkpoint_bytes(make_model(base.model)->describe().parameter_count, base.training.precision) / world;
  // A per-node path the scenario states (else the node's NICs, which the platform has): each
  // rank's share of it.
  if (spec.storage.per_node_bytes_per_s > 0)
    writes.rank_rate_cap_bytes_per_s = spec.storage.per_node_bytes_per_s / base.cluster.group_of(0).devices_per_node;
  std::vector<sim::StorageWrites> runs{writes};
  if (spec.async_checkpoint) {
    writes.alone = false;
    runs.push_back(writes);
  }
  runs[0].alone = true;
  const auto outcomes = run_in_processes(
      runs.size(),
      [&](std::size_t i) {
        sim::SimulationOptions with = options;
        with.storage_writes = runs[i];
        const sim::SimulationResult r = sim::simulate(strategy, base.cluster, with);
        char text[96];
        std::snprintf(text, sizeof text, "%.17g %.17g %d", r.storage_write_s, r.iteration_time_s,
                      static_cast<int>(r.iteration_times_s.size()));
        return std::string(text);
      },
      usable_cores());
  SimulatedStorage out;
  for (std::size_t i = 0; i < outcomes.size(); ++i) {
    if (!outcomes[i].ok) base.fail("reliability.storage", "simulating the checkpoint's writes failed: " + outcomes[i].error);
    double write = 0, iteration = 0;
    int iterations = 0;
    std::sscanf(outcomes[i].output.c_str(), "%lf %lf %d", &write, &iteration, &iterations);
    if (i == 0) out.write_s = write;
    else out.write_beside_s = write, out.iteration_beside_s = iteration, out.iterations_beside = iterations;
  }
  return out;
}

GoodputSetup goodput_setup(const ReliabilityScenario& scenario, const Strategy& strategy, Seconds iteration_s,
                           Bytes snapshot_bytes_per_device, const SimulatedStorage* simulated) {
  const Scenario& base = scenario.base;
  const ReliabilitySpec& spec = scenario.spec;
  const int world = strategy.world_size();
  GoodputSetup g;
  g.job = job_shape(base.cluster, world);

  sim::reliability::StorageSystem storage = spec.storage;
  if (storage.per_node_bytes_per_s == 0) storage.per_node_bytes_per_s = node_storage_bytes_per_s(base.cluster, world);
  if (storage.per_node_bytes_per_s == 0)
    base.fail("reliability.storage.per_node_gb_per_s", "the cluster's nodes have no network: say how fast a node reaches storage");
  g.per_node_bytes_per_s = storage.per_node_bytes_per_s;
  g.checkpoint_bytes = sim::reliability::checkpoint_bytes(make_model(base.model)->describe().parameter_count,
                                                          base.training.precision);
  g.write_s = sim::reliability::storage_transfer_s(storage, g.checkpoint_bytes, g.job.nodes);
  if (simulated != nullptr) g.write_s = simulated->write_s, g.storage_simulated = true;
  g.reload_s = g.write_s;  // reads as fast as writes: the same links and the same share
  g.snapshot_bytes_per_device = snapshot_bytes_per_device;
  if (spec.async_checkpoint) g.snapshot_s = g.snapshot_bytes_per_device / spec.host_copy_bytes_per_s;
  Seconds background_write_s = g.write_s;
  if (simulated != nullptr && spec.async_checkpoint && simulated->iteration_beside_s > 0) {
    // The training time the write's traffic costs: the measured window's delay beside it, and,
    // when the write outlasts the window, that delay for every window it lasts.
    background_write_s = simulated->write_beside_s;
    const double window_s = simulated->iterations_beside * simulated->iteration_beside_s;
    const Seconds delay_s = simulated->iterations_beside * std::max(0.0, simulated->iteration_beside_s - iteration_s);
    g.contention_s = delay_s * std::max(1.0, window_s > 0 ? background_write_s / window_s : 1.0);
  }

  sim::reliability::GoodputModel& m = g.model;
  m.iteration_s = iteration_s;
  m.tokens_per_iteration = static_cast<double>(strategy.sequences_per_iteration()) * base.training.seq_length;
  m.interval_s = spec.checkpoint_interval_s;
  m.checkpoint = spec.async_checkpoint ? sim::reliability::CheckpointCost{true, g.snapshot_s + g.contention_s, background_write_s}
                                       : sim::reliability::CheckpointCost{false, g.write_s, 0};
  sim::reliability::RestartCost restart;
  restart.relaunch_s = spec.relaunch_s;
  restart.init_s = spec.init_s;
  restart.reload_s = g.reload_s;
  restart.warmup_iterations = spec.warmup_iterations;
  m.restart_s = sim::reliability::restart_s(restart, m.iteration_s);
  m.failures = sim::reliability::failure_streams(spec.failures, g.job, spec.failure_rate_scale, spec.repair_s,
                                                 spec.leaf_switch_mtbf_s);
  m.policy = spec.policy;
  m.spare_nodes = spec.spare_nodes;
  m.replicas = base.parallel.data_parallel_size;
  const int replica_devices = base.parallel.tensor_model_parallel_size * base.parallel.context_parallel_size *
                              base.parallel.pipeline_model_parallel_size;
  m.replicas_per_node = std::max(1, base.cluster.group_of(0).devices_per_node / replica_devices);
  return g;
}

ExpectedGoodput expected_goodput(const GoodputSetup& setup) {
  const sim::reliability::GoodputModel& m = setup.model;
  ExpectedGoodput e;
  e.episode_throughput = m.episode_throughput();
  e.checkpoint_s = m.checkpoint.blocking_s;
  // Asynchronous: a failure also loses what trained while the last snapshot was still being
  // written (up to write_s more), counted with the restart.
  e.restart_s = m.restart_s + (m.checkpoint.asynchronous ? m.checkpoint.write_s : 0);
  const double rate = m.total_failure_rate_per_s();
  if (!(rate > 0)) {  // nothing fails: no checkpoint is needed, every second trains
    e.interval_s = m.interval_s;
    e.goodput = (m.interval_s > 0 ? m.interval_s / (m.interval_s + e.checkpoint_s) : 1.0) * e.episode_throughput;
    return e;
  }
  e.mtbf_s = 1 / rate;
  e.interval_s = m.interval_s > 0 ? m.interval_s : sim::reliability::daly_interval_s(e.checkpoint_s, e.mtbf_s);
  e.goodput = sim::reliability::daly_goodput(e.interval_s, e.checkpoint_s, e.restart_s, e.mtbf_s) * e.episode_throughput;
  return e;
}

std::vector<double> shrunk_throughput(const Scenario& base, const sim::SimulationOptions& options, int simulated) {
  const int replicas = base.parallel.data_parallel_size;
  const int lowest = std::max(1, replicas - simulated);
  sim::SimulationOptions plain = options;
  plain.stragglers.clear();
  // The plans tried: the full width as it is (the reference), and for each width a < R the
  // micro-batch sizes from the scenario's down by halves (a smaller one spreads the global batch
  // more evenly over fewer replicas), the fastest kept.
  struct Plan {
    int alive = 0;
    std::int64_t micro_batch_size = 0;
  };
  std::vector<Plan> plans{{replicas, base.training.micro_batch_size}};
  for (int a = replicas - 1; a >= lowest; --a)
    for (std::int64_t mbs = base.training.micro_batch_size; mbs >= 1; mbs /= 2) {
      plans.push_back({a, mbs});
      if (mbs % 2) break;
    }
  // Each in a child of its own (one SimGrid engine per process; this one has not started one).
  const auto outcomes = run_in_processes(
      plans.size(),
      [&](std::size_t i) {
        Scenario survivors = base;
        survivors.parallel.data_parallel_size = plans[i].alive;
        survivors.training.micro_batch_size = plans[i].micro_batch_size;
        if ((base.training.global_batch_size / plans[i].micro_batch_size) % plans[i].alive != 0)
          survivors.parallel.batch_split = BatchSplit::proportional;
        char text[64];
        std::snprintf(text, sizeof text, "%.17g",
                      sim::simulate(*make_strategy(survivors), survivors.cluster, plain).iteration_time_s);
        return std::string(text);
      },
      usable_cores());
  if (!outcomes[0].ok) base.fail("reliability.policy", "shrink: simulating the full width failed: " + outcomes[0].error);
  const Seconds full_s = std::stod(outcomes[0].output);
  std::vector<double> throughput(static_cast<std::size_t>(replicas) + 1, 0.0);
  throughput.back() = 1.0;
  for (std::size_t i = 1; i < plans.size(); ++i) {
    if (!outcomes[i].ok) continue;  // a plan that does not fit (memory, batch): another size may
    double& best = throughput[static_cast<std::size_t>(plans[i].alive)];
    best = std::max(best, std::min(1.0, full_s / std::stod(outcomes[i].output)));
  }
  for (int a = replicas - 1; a >= lowest; --a)
    if (!(throughput[static_cast<std::size_t>(a)] > 0))
      base.fail("reliability.policy", "shrink: no plan of the scenario's layout runs on " + std::to_string(a) +
                                          " surviving replicas");
  for (int a = lowest - 1; a >= 1; --a)
    throughput[static_cast<std::size_t>(a)] = throughput[static_cast<std::size_t>(lowest)] * a / lowest;
  return throughput;
}

std::vector<sim::reliability::Slowdown> transient_slowdowns(const Scenario& base, const sim::SimulationOptions& options,
                                                            std::uint64_t seed, Seconds rebalance_after_s) {
  const bool rebalance = rebalance_after_s > 0;
  // A re-split that takes longer than the part it serves leaves this much (validate: > 0).
  constexpr double kMinThroughput = 1e-3;
  const std::vector<StragglerSpec> specs = transient_stragglers(base.stragglers);
  if (specs.empty()) return {};
  const int world = make_strategy(base)->world_size();
  // What to simulate: the iteration between episodes; for each transient straggler the iteration
  // with it slowing the job as well; with re-balancing, the same with the work split by the
  // devices' speeds during the episode, and that split once the straggler has healed.
  struct Plan {
    sim::SimulationOptions options;
    std::vector<double> speeds;  // empty: the scenario's split
  };
  std::vector<Plan> plans{{options, {}}};
  std::vector<sim::reliability::Straggler> drawn;
  for (std::size_t k = 0; k < specs.size(); ++k) {
    const auto one = draw_stragglers({specs[k]}, world, sim::reliability::RandomStream::derive(seed, k + 1));
    drawn.push_back(one.at(0));
    sim::SimulationOptions with = options;
    add_straggler(with.stragglers, one[0]);  // on a rank already slow: the two compound
    plans.push_back({with, {}});
    if (!rebalance) continue;
    // Each device's peak, the episode's straggler's over its slowdown: the re-split answers the
    // episode (the permanent stragglers keep the scenario's split, as between episodes).
    std::vector<double> speeds;
    for (int r = 0; r < world; ++r) speeds.push_back(base.cluster.device_of(r).peak_flops_per_s(base.training.precision));
    speeds.at(static_cast<std::size_t>(one[0].rank)) /= one[0].compute_slowdown;
    plans.push_back({with, speeds});
    plans.push_back({options, speeds});
  }
  const auto outcomes = run_in_processes(
      plans.size(),
      [&](std::size_t i) {
        Scenario s = base;
        if (!plans[i].speeds.empty()) {
          s.parallel.batch_split = BatchSplit::proportional;
          if (s.strategy_type == "hybrid" && s.parallel.pipeline_model_parallel_size > 1)
            s.hybrid.partition = HybridConfig::Partition::proportional;
        }
        char text[64];
        std::snprintf(text, sizeof text, "%.17g",
                      sim::simulate(*make_strategy(s, plans[i].speeds), s.cluster, plans[i].options).iteration_time_s);
        return std::string(text);
      },
      usable_cores());
  // A pipeline's re-split moves layers (scenarios/layer_resplit.hpp): its cost, charged to the
  // re-balanced parts of each episode.
  const auto resplit_of = [&](std::size_t k) -> Seconds {
    const std::vector<double>& speeds = plans[1 + k * 3 + 1].speeds;
    Scenario to = base;
    to.parallel.batch_split = BatchSplit::proportional;
    if (to.strategy_type != "hybrid" || to.parallel.pipeline_model_parallel_size < 2) return 0;
    to.hybrid.partition = HybridConfig::Partition::proportional;
    return layer_resplit_s(*make_strategy(base), *make_strategy(to, speeds), base.cluster, layer_state_bytes_per_rank(base));
  };
  const std::size_t per = rebalance ? 3 : 1;  // plans per straggler
  for (std::size_t i = 0; i < outcomes.size(); ++i)
    if (!outcomes[i].ok)
      base.fail("stragglers", "simulating " + (i == 0 ? std::string("the iteration between episodes")
                                                      : "an episode of " + sim::reliability::describe(drawn[(i - 1) / per])) +
                                  " failed: " + outcomes[i].error);
  const Seconds plain_s = std::stod(outcomes[0].output);
  const auto ratio = [&](std::size_t i) { return std::min(1.0, plain_s / std::stod(outcomes[i].output)); };
  std::vector<sim::reliability::Slowdown> out;
  for (std::size_t k = 0; k < specs.size(); ++k) {
    const std::size_t at = 1 + k * per;
    sim::reliability::Slowdown slowdown{sim::reliability::describe(drawn[k]), 1 / specs[k].episode_every_s,
                                        specs[k].episode_mean_s, ratio(at)};
    if (rebalance) {
      slowdown.resplit_s = resplit_of(k);
      const double kept_rebalanced = std::max(0.0, 1 - slowdown.resplit_s / specs[k].episode_mean_s);
      const double kept_after = std::max(0.0, 1 - slowdown.resplit_s / rebalance_after_s);
      slowdown.rebalanced = std::max(kMinThroughput, ratio(at + 1) * kept_rebalanced);
      slowdown.after = std::max(kMinThroughput, ratio(at + 2) * kept_after);
    }
    out.push_back(slowdown);
  }
  return out;
}

}  // namespace tandem
