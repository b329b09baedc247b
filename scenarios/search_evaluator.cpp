#include "scenarios/search_evaluator.hpp"

#include <algorithm>
#include <functional>

#include "common/process_pool.hpp"
#include "scenarios/candidate_scenario.hpp"
#include "scenarios/prediction_inputs.hpp"
#include "sim/simulation.hpp"
#include "strategies/search/analytic_estimate.hpp"

namespace tandem {

SimulationEvaluator::SimulationEvaluator(Scenario base, int workers, std::function<void()> on_simulated)
    : base_(std::move(base)), workers_(workers), on_simulated_(std::move(on_simulated)) {}

search::Estimate SimulationEvaluator::estimate_one(const search::Candidate& c) const {
  search::Estimate e;
  const Scenario s = scenario_for(base_, c);
  std::unique_ptr<Strategy> strategy;
  try {
    strategy = make_strategy(s);
  } catch (const InputError& error) {
    const std::string field = error.field().starts_with("strategy.") ? error.field().substr(9) : error.field();
    e.invalid_reason = "rejected by the strategy (" + field + ")";
    return e;
  }
  const search::AnalyticEstimate a = search::estimate_strategy(*strategy, s.cluster);
  e.valid = true;
  e.peak_memory_bytes = a.peak_memory_bytes;
  e.memory_fraction = a.memory_fraction;
  e.iteration_time_s = a.iteration_time_s;
  e.energy_per_iteration_j = a.energy_per_iteration_j;
  e.usd_per_s = search::usd_per_s(s.cluster, c.world_size());
  if (const auto* hybrid = dynamic_cast<const HybridParallel*>(strategy.get())) {
    auto all_equal = [](const auto& v) { return std::adjacent_find(v.begin(), v.end(), std::not_equal_to<>()) == v.end(); };
    e.even_batches = all_equal(hybrid->micro_batches_per_replica());
    e.even_layers = all_equal(hybrid->layers_per_virtual_stage());
    const int stages = hybrid->layout().pp_size();
    e.layers_per_stage.assign(stages, 0);
    const auto& per_virtual = hybrid->layers_per_virtual_stage();
    for (std::size_t v = 0; v < per_virtual.size(); ++v) e.layers_per_stage[v % stages] += per_virtual[v];
  }
  return e;
}

std::vector<search::Estimate> SimulationEvaluator::estimate(const std::vector<search::Candidate>& candidates) {
  std::vector<search::Estimate> out;
  for (const auto& c : candidates) out.push_back(estimate_one(c));
  return out;
}

sim::Prediction predict(const Scenario& s) {
  auto strategy = make_strategy(s);
  const sim::SimulationResult result = sim::simulate(*strategy, s.cluster, s.simulation);
  return sim::summarize(result, s.cluster, prediction_inputs(s, *strategy));
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
  return evaluation_of(predict(s), s.cluster);
}

std::vector<search::Evaluation> SimulationEvaluator::evaluate(const std::vector<search::Candidate>& candidates) {
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
