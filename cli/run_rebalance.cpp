#include "cli/run_rebalance.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <stdexcept>

#include "cli/simulated_iterations.hpp"
#include "strategies/hybrid_parallel.hpp"

namespace tandem::cli {

std::vector<double> replica_speeds(const std::vector<RankRole>& roles, const std::vector<double>& compute_s,
                                   int iterations) {
  const int world = static_cast<int>(compute_s.size());
  // Seconds of compute per sequence, the replica's slowest rank's.
  std::vector<double> replica_worst;
  for (int r = 0; r < world; ++r) {
    const RankRole role = static_cast<std::size_t>(r) < roles.size() ? roles[r] : RankRole{};
    if (role.replica < 0 || role.sequences <= 0) continue;
    if (static_cast<int>(replica_worst.size()) <= role.replica) replica_worst.resize(role.replica + 1, 0.0);
    const double s = compute_s[r] / (static_cast<double>(role.sequences) * std::max(1, iterations));
    replica_worst[role.replica] = std::max(replica_worst[role.replica], s);
  }
  std::vector<double> speeds(static_cast<std::size_t>(world), 0.0);
  double sum = 0;
  int known = 0;
  for (int r = 0; r < world; ++r) {
    const RankRole role = static_cast<std::size_t>(r) < roles.size() ? roles[r] : RankRole{};
    if (role.replica < 0 || role.replica >= static_cast<int>(replica_worst.size()) ||
        !(replica_worst[role.replica] > 0))
      continue;
    speeds[r] = 1.0 / replica_worst[role.replica];
    sum += speeds[r], ++known;
  }
  if (known == 0) throw std::runtime_error("no replica computed anything: nothing to re-balance on");
  for (double& s : speeds)
    if (!(s > 0)) s = sum / known;
  return speeds;
}

namespace {
// What each pipeline stage computed: seconds per layer and sequence of each (replica, stage), its
// slowest rank's, and the stage's layers today.
struct StageWork {
  std::map<std::pair<int, int>, double> per_layer_s;
  std::map<int, int> layers;
};
StageWork stage_work(const std::vector<RankRole>& roles, const std::vector<double>& compute_s, int iterations) {
  StageWork w;
  for (std::size_t r = 0; r < compute_s.size() && r < roles.size(); ++r) {
    const RankRole& role = roles[r];
    if (role.stage < 0 || role.layers <= 0 || role.sequences <= 0 || !(compute_s[r] > 0)) continue;
    const double work = static_cast<double>(role.layers) * static_cast<double>(role.sequences) * std::max(1, iterations);
    double& worst = w.per_layer_s[{role.replica, role.stage}];
    worst = std::max(worst, compute_s[r] / work);
    w.layers[role.stage] = role.layers;
  }
  if (w.per_layer_s.empty()) throw std::runtime_error("no pipeline stage computed anything: nothing to re-balance on");
  return w;
}
}  // namespace

std::vector<double> stage_speeds(const std::vector<RankRole>& roles, const std::vector<double>& compute_s,
                                 int iterations) {
  // A stage's seconds per layer and sequence: its slowest rank's, whatever its replica.
  std::map<int, double> stage_worst;
  for (const auto& [at, sec] : stage_work(roles, compute_s, iterations).per_layer_s)
    stage_worst[at.second] = std::max(stage_worst[at.second], sec);
  std::vector<double> speeds(compute_s.size(), 0.0);
  for (std::size_t r = 0; r < speeds.size(); ++r) {
    const auto it = r < roles.size() ? stage_worst.find(roles[r].stage) : stage_worst.end();
    if (it == stage_worst.end()) throw std::runtime_error("rank " + std::to_string(r) + "'s stage computed nothing");
    speeds[r] = 1.0 / it->second;
  }
  return speeds;
}

LayersAndBatch split_layers_and_batch(const std::vector<RankRole>& roles, const std::vector<double>& compute_s,
                                      int iterations, int chunks) {
  const StageWork work = stage_work(roles, compute_s, iterations);
  const int stages = static_cast<int>(work.layers.size());
  // The layers by each stage's slowest replica's speed, whole chunks at a time.
  std::vector<double> stage_speed(static_cast<std::size_t>(stages), INFINITY);
  int total = 0;
  for (const auto& [at, sec] : work.per_layer_s)
    if (at.first >= 0)
      stage_speed[static_cast<std::size_t>(at.second)] = std::min(stage_speed[static_cast<std::size_t>(at.second)], 1.0 / sec);
  for (const auto& [stage, n] : work.layers) total += n;
  LayersAndBatch out;
  for (const std::int64_t units : split_proportionally(total / std::max(1, chunks), stage_speed))
    out.layers_per_stage.push_back(static_cast<int>(units) * std::max(1, chunks));
  // Each replica's seconds per sequence with the layers moved: its slowest stage's.
  std::map<int, double> replica_s;
  for (const auto& [at, sec] : work.per_layer_s)
    if (at.first >= 0)
      replica_s[at.first] = std::max(replica_s[at.first], out.layers_per_stage[static_cast<std::size_t>(at.second)] * sec);
  for (std::size_t r = 0; r < compute_s.size(); ++r) {
    const auto it = r < roles.size() ? replica_s.find(roles[r].replica) : replica_s.end();
    if (it == replica_s.end()) throw std::runtime_error("rank " + std::to_string(r) + "'s replica computed nothing");
    out.speeds.push_back(1.0 / it->second);
  }
  return out;
}

bool rebalances_layers(const Scenario& scenario) {
  return scenario.strategy_type == "hybrid" && scenario.parallel.pipeline_model_parallel_size > 1 &&
         scenario.parallel.data_parallel_size == 1 && scenario.hybrid.layers_per_stage.empty();
}

std::unique_ptr<Strategy> rebalanced_strategy(const Scenario& scenario, const std::vector<double>& speeds) {
  Scenario s = scenario;
  if (rebalances_layers(scenario)) s.hybrid.partition = HybridConfig::Partition::proportional;
  else s.parallel.batch_split = BatchSplit::proportional;
  return make_strategy(s, speeds);
}

namespace {
// Each plan's simulated iteration with the ranks slowed by `slowdown` (one per rank, 1 = not slowed).
std::vector<Seconds> simulated_with_slowdown(const Scenario& scenario, const std::vector<double>& slowdown,
                                             const std::vector<StrategyMaker>& plans) {
  sim::SimulationOptions options = scenario.simulation;
  options.stragglers.clear();
  for (std::size_t r = 0; r < slowdown.size(); ++r)
    if (slowdown[r] != 1) options.stragglers.push_back({static_cast<int>(r), slowdown[r], 1.0});
  return simulated_iteration_s(plans, scenario.cluster, options, "predicting the re-balanced run");
}
}  // namespace

RebalancePrediction predict_rebalance(const Scenario& scenario, const std::vector<double>& slowdown,
                                      const std::vector<double>& speeds) {
  const std::vector<Seconds> times = simulated_with_slowdown(
      scenario, slowdown, {[&] { return make_strategy(scenario); }, [&] { return rebalanced_strategy(scenario, speeds); }});
  return {times[0], times[1]};
}

namespace {

std::vector<std::int64_t> micro_batches_of(const Strategy& strategy, std::int64_t micro_batch_size) {
  std::vector<std::int64_t> counts;
  for (const RankRole& role : strategy.rank_roles()) {
    if (role.replica < 0) continue;
    if (static_cast<int>(counts.size()) <= role.replica) counts.resize(role.replica + 1, 0);
    counts[role.replica] = role.sequences / std::max<std::int64_t>(1, micro_batch_size);
  }
  return counts;
}

std::vector<std::int64_t> layers_of(const Strategy& strategy) {
  const auto* hybrid = dynamic_cast<const HybridParallel*>(&strategy);
  if (hybrid == nullptr) return {};
  const std::vector<int> layers = hybrid->layers_per_stage();
  return {layers.begin(), layers.end()};
}

std::string joined(const std::vector<std::int64_t>& v) {
  std::string out;
  for (std::int64_t x : v) out += (out.empty() ? "" : "/") + std::to_string(x);
  return out;
}

}  // namespace

RebalancedRun run_rebalanced(const Scenario& scenario, const Strategy& strategy, const exec::cpu::RunOptions& options,
                             int first_part, const CpuRunner& run, long job_id, std::ostream* live) {
  if (first_part < 1 || first_part >= options.iterations)
    throw std::invalid_argument("re-balancing needs iterations before and after it");
  RebalancedRun out;
  // The hand-over checkpoint: the run's own when it keeps one (its periodic checkpoints go on
  // through the first part, and an elastic supervisor resumes a failed job from them), else a
  // temporary one, removed.
  const bool own = !options.checkpoint_path.empty();
  const std::filesystem::path checkpoint =
      own ? std::filesystem::path(options.checkpoint_path)
          : std::filesystem::temp_directory_path() / ("tandem-rebalance-" + std::to_string(job_id) + ".ck");
  exec::cpu::RunOptions first = options;
  first.iterations = first_part;
  first.checkpoint_path = checkpoint.string();
  if (!own) first.checkpoint_every = 0;
  out.before = run(strategy, first);
  // Measured speeds, the re-split strategy, the rest of the run from the checkpoint.
  std::vector<double> compute_s;
  for (const auto& rank : out.before.ranks) compute_s.push_back(rank.compute_s);
  const int measured = first.iterations + first.warmup_iterations;
  std::vector<double> slowdown = options.compute_slowdown;
  slowdown.resize(static_cast<std::size_t>(strategy.world_size()), 1.0);
  bool layers = rebalances_layers(scenario);
  const std::vector<double> speeds = layers ? stage_speeds(strategy.rank_roles(), compute_s, measured)
                                            : replica_speeds(strategy.rank_roles(), compute_s, measured);
  std::unique_ptr<Strategy> rebalanced = rebalanced_strategy(scenario, speeds);
  if (scenario.strategy_type == "hybrid" && scenario.parallel.pipeline_model_parallel_size > 1 &&
      scenario.parallel.data_parallel_size > 1 && scenario.hybrid.layers_per_stage.empty()) {
    // Replicas and stages both: the simulator weighs the batch alone against layers and batch.
    const LayersAndBatch both = split_layers_and_batch(strategy.rank_roles(), compute_s, measured,
                                                       scenario.hybrid.virtual_stages);
    Scenario moved = scenario;
    moved.hybrid.layers_per_stage = both.layers_per_stage;
    moved.parallel.batch_split = BatchSplit::proportional;
    const std::vector<Seconds> t = simulated_with_slowdown(
        scenario, slowdown,
        {[&] { return make_strategy(scenario); }, [&] { return rebalanced_strategy(scenario, speeds); },
         [&] { return make_strategy(moved, both.speeds); }});
    layers = t[2] < t[1];
    out.chosen = layers ? "layers and batch" : "batch";
    out.predicted = {t[0], layers ? t[2] : t[1]};
    out.predicted_other_s = layers ? t[1] : t[2];
    if (layers) rebalanced = make_strategy(moved, both.speeds);
  }
  out.micro_batches_before = micro_batches_of(strategy, scenario.training.micro_batch_size);
  out.micro_batches_after = micro_batches_of(*rebalanced, scenario.training.micro_batch_size);
  if (layers) {
    out.layers_before = layers_of(strategy);
    out.layers_after = layers_of(*rebalanced);
  }
  // "micro-batches per replica A -> B" first when there are replicas (the elastic supervisor
  // reads it), then the layers when they moved.
  const bool replicas = out.micro_batches_before.size() > 1;
  std::string what = replicas ? "micro-batches per replica " + joined(out.micro_batches_before) + " -> " +
                                    joined(out.micro_batches_after)
                              : "";
  if (layers)
    what += (replicas ? ", " : "") + std::string("layers per stage ") + joined(out.layers_before) + " -> " +
            joined(out.layers_after);
  const std::string why = out.chosen.empty() ? "measured speeds" : "measured speeds; the simulator chose " + out.chosen;
  char split[300];
  std::snprintf(split, sizeof split, "rebalance   after %d iteration(s): %s (%s)\n", first_part, what.c_str(), why.c_str());
  if (live) *live << split << std::flush;  // said as it happens: an elastic supervisor echoes it
  exec::cpu::RunOptions second = options;
  second.iterations = options.iterations - first_part;
  second.warmup_iterations = 0;
  second.resume_path = checkpoint.string();
  try {
    out.after = run(*rebalanced, second);
  } catch (...) {
    if (!own) std::filesystem::remove(checkpoint);
    throw;
  }
  if (!own) std::filesystem::remove(checkpoint);
  if (out.chosen.empty()) out.predicted = predict_rebalance(scenario, slowdown, speeds);
  char line[256];
  std::snprintf(line, sizeof line,
                "before      %.4f s/iteration measured, %.4f s predicted\n"
                "after       %.4f s/iteration measured, %.4f s predicted (%+.1f%% measured, %+.1f%% predicted)\n",
                out.before.iteration_time_s, out.predicted.before_s, out.after.iteration_time_s, out.predicted.after_s,
                100 * (out.after.iteration_time_s / out.before.iteration_time_s - 1),
                100 * (out.predicted.after_s / out.predicted.before_s - 1));
  out.report = (live ? "" : std::string(split)) + line;
  return out;
}

}  // namespace tandem::cli
