#include "scenarios/search_evaluator.hpp"

#include <algorithm>
#include <functional>
#include <stdexcept>

#include "common/process_pool.hpp"
#include "scenarios/candidate_scenario.hpp"
#include "scenarios/goodput_inputs.hpp"
#include "scenarios/prediction_inputs.hpp"
#include "sim/cost_model.hpp"
#include "sim/simulation.hpp"
#include "strategies/search/analytic_estimate.hpp"

namespace tandem {

SimulationEvaluator::SimulationEvaluator(Scenario base, int workers, std::function<void()> on_simulated,
                                         std::optional<ReliabilitySpec> reliability,
                                         std::optional<ConvergenceTable> convergence)
    : base_(std::move(base)),
      workers_(workers),
      on_simulated_(std::move(on_simulated)),
      reliability_(std::move(reliability)),
      convergence_(std::move(convergence)) {}

namespace {

// The simulator's own cost model: a compute op costs exactly this there, so the bound is tight.
Seconds simulated_compute_s(const ComputeOp& op, const DeviceProfile& d) { return sim::compute_cost(op, d).seconds; }

// The candidate's strategy, or why it cannot be built.
std::unique_ptr<Strategy> build(const Scenario& s, search::Estimate& e) {
  try {
    return make_strategy(s);
  } catch (const InputError& error) {
    const std::string field = error.field().starts_with("strategy.") ? error.field().substr(9) : error.field();
    e.invalid_reason = "rejected by the strategy (" + field + ")";
    return nullptr;
  }
}

// Iterations to train `target_tokens` (0: no target) at the strategy's batch.
double iterations_to_train(const Strategy& strategy, const Scenario& s, double target_tokens) {
  const double tokens_per_iteration = static_cast<double>(strategy.sequences_per_iteration()) * s.training.seq_length;
  return target_tokens > 0 ? target_tokens / tokens_per_iteration : 0;
}

// What the strategy itself says, without tracing: its price, how its splits came out, the
// iterations to the reliability target, the steps to the target loss (invalid without them).
void describe(const Strategy& strategy, const Scenario& s, const search::Candidate& c, double target_tokens,
              const std::optional<ConvergenceTable>& convergence, search::Estimate& e) {
  e.valid = true;
  if (convergence) {
    // Without measured steps the search lists the plan among the ruled out, with the reason.
    const std::optional<int> steps = convergence->steps_to_target(s.parallel, e.invalid_reason);
    e.valid = steps.has_value();
    e.steps_to_target_loss = steps.value_or(0);
  }
  e.usd_per_s = search::usd_per_s(s.cluster, c.world_size());
  e.iterations_to_train = iterations_to_train(strategy, s, target_tokens);
  if (const auto* hybrid = dynamic_cast<const HybridParallel*>(&strategy)) {
    auto all_equal = [](const auto& v) { return std::adjacent_find(v.begin(), v.end(), std::not_equal_to<>()) == v.end(); };
    e.even_batches = all_equal(hybrid->micro_batches_per_replica());
    e.even_layers = all_equal(hybrid->layers_per_virtual_stage());
    e.layers_per_stage = hybrid->layers_per_stage();
  }
}

}  // namespace

search::Estimate SimulationEvaluator::estimate_one(const search::Candidate& c) const {
  search::Estimate e;
  const Scenario s = scenario_for(base_, c);
  const std::unique_ptr<Strategy> strategy = build(s, e);
  if (!strategy) return e;
  const search::AnalyticEstimate a = search::estimate_strategy(*strategy, s.cluster, simulated_compute_s);
  describe(*strategy, s, c, target_tokens(), convergence_, e);
  if (!e.valid) return e;
  e.peak_memory_bytes = a.peak_memory_bytes;
  e.memory_fraction = a.memory_fraction;
  e.iteration_time_s = a.iteration_time_s;
  e.energy_per_iteration_j = a.energy_per_iteration_j;
  e.simulation_size = a.replica_ops;
  return e;
}

search::Candidate sketch_twin(const search::Candidate& c, const std::vector<int>& layers_per_stage) {
  search::Candidate twin = c;
  twin.batch_split = BatchSplit::even;
  twin.schedule = PipelineSchedule::one_f_one_b;
  twin.virtual_stages = 1;
  twin.partition = HybridConfig::Partition::uniform;
  const bool uniform = std::adjacent_find(layers_per_stage.begin(), layers_per_stage.end(), std::not_equal_to<>()) ==
                       layers_per_stage.end();
  twin.layers_per_stage = uniform ? std::vector<int>{} : layers_per_stage;
  return twin;
}

search::Estimate SimulationEvaluator::sketch_one(const search::Candidate& c) const {
  search::Estimate e;
  const Scenario s = scenario_for(base_, c);
  const std::unique_ptr<Strategy> strategy = build(s, e);
  if (!strategy) return e;
  const auto* hybrid = dynamic_cast<const HybridParallel*>(strategy.get());
  if (hybrid == nullptr) return estimate_one(c);
  // Micro-batches per replica of the two short traces: the first and the last micro-batch may
  // differ from the others, every other one issues the same ops.
  constexpr int k1 = 2, k2 = 3;
  const auto& micro_batches = hybrid->micro_batches_per_replica();
  if (*std::min_element(micro_batches.begin(), micro_batches.end()) < k1 ||
      *std::max_element(micro_batches.begin(), micro_batches.end()) <= k2)
    return estimate_one(c);  // short already: the full trace costs no more
  describe(*strategy, s, c, target_tokens(), convergence_, e);
  if (!e.valid) return e;
  const search::Candidate twin = sketch_twin(c, e.layers_per_stage);
  auto traced = twin_traces_.find(twin);
  if (traced == twin_traces_.end()) {
    std::array<search::AnalyticEstimate, 2> traces;
    for (int k : {k1, k2}) {
      Scenario shorter = scenario_for(base_, twin);
      shorter.training.global_batch_size = c.micro_batch_size * c.dp * k;
      search::Estimate ignored;
      const std::unique_ptr<Strategy> short_strategy = build(shorter, ignored);
      if (short_strategy == nullptr) return estimate_one(c);  // the twin says nothing about this strategy
      traces[k == k1 ? 0 : 1] =
          search::estimate_strategy(*short_strategy, s.cluster, simulated_compute_s, search::EstimateDetail::compute);
    }
    traced = twin_traces_.emplace(twin, std::move(traces)).first;
  }
  const search::AnalyticEstimate a =
      search::extrapolate_micro_batches(*hybrid, s.cluster, traced->second[0], k1, traced->second[1], k2);
  e.sketched = true;
  e.iteration_time_s = a.iteration_time_s;
  e.energy_per_iteration_j = a.energy_per_iteration_j;
  e.simulation_size = a.replica_ops;
  return e;
}

std::vector<search::Estimate> SimulationEvaluator::in_workers(const std::vector<search::Candidate>& candidates,
                                                              bool sketch) const {
  const auto one = [&](std::size_t i) { return sketch ? sketch_one(candidates[i]) : estimate_one(candidates[i]); };
  constexpr std::size_t kWorthForking = 32;  // fewer: a fork costs more than it saves
  std::vector<search::Estimate> out;
  if (workers_ <= 1 || candidates.size() < kWorthForking) {
    for (std::size_t i = 0; i < candidates.size(); ++i) out.push_back(one(i));
    return out;
  }
  const std::size_t shares = static_cast<std::size_t>(workers_);
  // Candidates likely to share a sketch twin (the same plan but for schedule and batch split) go
  // to the same worker, which traces the twin once for all of them.
  std::map<search::Candidate, std::size_t> group_of;
  std::vector<std::size_t> share_of(candidates.size());
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    search::Candidate group = candidates[i];
    group.batch_split = BatchSplit::even;
    group.schedule = PipelineSchedule::one_f_one_b;
    group.virtual_stages = 1;
    share_of[i] = group_of.emplace(group, group_of.size()).first->second % shares;
  }
  const auto outcomes = run_in_processes(
      shares,
      [&](std::size_t k) {
        nlohmann::json share = nlohmann::json::array();
        for (std::size_t i = 0; i < candidates.size(); ++i)
          if (share_of[i] == k) share.push_back(search::to_json(one(i)));
        return share.dump();
      },
      workers_);
  std::vector<nlohmann::json> parsed;
  for (const ProcessOutcome& o : outcomes) {
    if (!o.ok) throw std::runtime_error("estimating candidates: " + o.error);
    parsed.push_back(nlohmann::json::parse(o.output));
  }
  std::vector<std::size_t> next(shares, 0);
  for (std::size_t i = 0; i < candidates.size(); ++i)
    out.push_back(search::estimate_from_json(parsed[share_of[i]].at(next[share_of[i]]++)));
  return out;
}

std::vector<search::Estimate> SimulationEvaluator::estimate(const std::vector<search::Candidate>& candidates) {
  return in_workers(candidates, false);
}

std::vector<search::Estimate> SimulationEvaluator::sketch(const std::vector<search::Candidate>& candidates) {
  return in_workers(candidates, true);
}

sim::Prediction predict(const Scenario& s) { return predict(s, *make_strategy(s)); }

sim::Prediction predict(const Scenario& s, const Strategy& strategy) {
  const sim::SimulationResult result = sim::simulate(strategy, s.cluster, s.simulation);
  return sim::summarize(result, s.cluster, prediction_inputs(s, strategy));
}

search::Evaluation evaluation_of(const sim::Prediction& p, const Cluster& cluster) {
  search::Evaluation e;
  e.ok = true;
  e.strategy = p.strategy;
  e.iteration_time_s = p.iteration_time_s;
  e.tokens_per_s = p.tokens_per_s;
  e.samples_per_s = p.samples_per_s;
  e.mfu = p.mfu;
  for (const sim::GroupMemory& g : p.memory) {
    e.peak_memory_bytes = std::max(e.peak_memory_bytes, g.peak_max_bytes);
    e.memory_fraction = std::max(e.memory_fraction, g.peak_max_bytes / g.capacity_bytes);
  }
  e.energy_per_iteration_j = p.energy_per_iteration_j;
  e.usd_per_s = search::usd_per_s(cluster, p.devices);
  e.compute_s = p.slowest.compute_s;
  e.exposed_comm_s = p.slowest.exposed_comm_s;
  e.idle_s = p.slowest.idle_s;
  e.simulation_wall_s = p.simulation_wall_time_s;
  return e;
}

search::Evaluation SimulationEvaluator::simulate_here(const search::Candidate& c) const {
  const Scenario s = scenario_for(base_, c);
  const std::unique_ptr<Strategy> strategy = make_strategy(s);
  // Transient stragglers' episodes, for the goodput: each simulated in a child (before this
  // process starts its engine), on the devices this plan uses (one it leaves idle slows nothing).
  std::vector<sim::reliability::Slowdown> slowdowns;
  if (reliability_) {
    Scenario used = s;
    std::erase_if(used.stragglers, [&](const StragglerSpec& st) {
      return st.transient() && st.rank >= strategy->world_size();
    });
    slowdowns = transient_slowdowns(used, s.simulation, /*seed=*/1, reliability_->rebalance_after_s);
  }
  // The checkpoint's traffic through the storage, simulated as `tandem goodput` simulates it
  // (multi-node jobs; in children, before this process starts its engine).
  std::optional<SimulatedStorage> storage;
  if (reliability_) storage = simulate_storage(ReliabilityScenario{s, *reliability_}, *strategy, s.simulation);
  const sim::Prediction prediction = predict(s, *strategy);
  search::Evaluation e = evaluation_of(prediction, s.cluster);
  if (reliability_) {
    // The candidate's own failures (its devices, nodes and leaf switches) and checkpoint costs
    // (simulated above), weighed in closed form: goodput_inputs.hpp.
    Bytes largest_snapshot = 0;
    for (const sim::GroupMemory& g : prediction.memory) largest_snapshot = std::max(largest_snapshot, snapshot_bytes(g.at_peak));
    GoodputSetup setup = goodput_setup(ReliabilityScenario{s, *reliability_}, *strategy, e.iteration_time_s, largest_snapshot,
                                       storage ? &*storage : nullptr);
    setup.model.slowdowns = std::move(slowdowns);
    setup.model.rebalance_after_s = reliability_->rebalance_after_s;
    const ExpectedGoodput g = expected_goodput(setup);
    e.episode_throughput = g.episode_throughput;
    e.goodput = g.goodput;
    e.mtbf_s = g.mtbf_s;
    e.checkpoint_interval_s = g.interval_s;
    const double iterations = iterations_to_train(*strategy, s, reliability_->target_tokens);
    e.time_to_train_s = g.goodput > 0 ? iterations * e.iteration_time_s / g.goodput : 0;
  }
  if (convergence_) {
    std::string why;  // an estimate without steps was ruled out before simulating
    e.steps_to_target_loss = convergence_->steps_to_target(s.parallel, why).value_or(0);
    e.time_to_target_loss_s = e.steps_to_target_loss * e.iteration_time_s;
  }
  return e;
}

std::vector<search::Evaluation> SimulationEvaluator::evaluate(const std::vector<search::Candidate>& candidates) {
  sim::load_simulator();  // once here, not in every worker
  const auto outcomes = run_in_processes(
      candidates.size(), [&](std::size_t i) { return search::to_json(simulate_here(candidates[i])).dump(); },
      workers_, [&](std::size_t) {
        if (on_simulated_) on_simulated_();
      });
  std::vector<search::Evaluation> out;
  for (std::size_t i = 0; i < candidates.size(); ++i) {
    search::Evaluation e;
    if (outcomes[i].ok) {
      e = search::evaluation_from_json(nlohmann::json::parse(outcomes[i].output));
    } else {
      e.error = outcomes[i].error;
    }
    out.push_back(e);
  }
  return out;
}

}  // namespace tandem
