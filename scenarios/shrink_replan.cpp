#include "scenarios/shrink_replan.hpp"

#include <algorithm>
#include <cstdio>

#include "common/process_pool.hpp"
#include "common/usable_cores.hpp"
#include "scenarios/goodput_inputs.hpp"
#include "scenarios/search_evaluator.hpp"
#include "scenarios/search_spec.hpp"
#include "sim/simulation.hpp"

namespace tandem {

namespace {

// The scenario's own plan at full width, without stragglers: tokens per second (in a child, since
// SimGrid holds one engine per process and the caller has yet to start its own).
double full_width_tokens_per_s(const Scenario& plain) {
  const auto outcome = run_in_processes(
      1,
      [&](std::size_t) {
        const auto strategy = make_strategy(plain);
        const sim::SimulationResult r = sim::simulate(*strategy, plain.cluster, plain.simulation);
        char text[64];
        std::snprintf(text, sizeof text, "%.17g",
                      static_cast<double>(strategy->sequences_per_iteration()) * plain.training.seq_length /
                          r.iteration_time_s);
        return std::string(text);
      },
      1);
  if (!outcome[0].ok) plain.fail("reliability.replan", "simulating the full width failed: " + outcome[0].error);
  return std::stod(outcome[0].output);
}

// ": most candidates were dropped: REASON (N of M)", or nothing when none was.
std::string most_common_reason(const search::SearchResult& result) {
  std::int64_t total = 0;
  const std::pair<const std::string, std::int64_t>* top = nullptr;
  for (const auto& entry : result.dropped) {
    total += entry.second;
    if (top == nullptr || entry.second > top->second) top = &entry;
  }
  if (top == nullptr) return "";
  return ": most candidates were dropped: " + top->first + " (" + std::to_string(top->second) + " of " +
         std::to_string(total) + ")";
}

}  // namespace

ReplannedShrink replan_shrink(const Scenario& base, int simulated) {
  // 1. The search as the scenario states it, without stragglers (the full width is compared
  //    without them too), ranking by iteration time.
  SearchScenario spec = load_search_scenario(base.file, search::Objective::time);
  spec.base.simulation.stragglers.clear();
  spec.base.stragglers.clear();
  const Cluster& cluster = spec.base.cluster;
  if (cluster.groups.size() != 1)
    base.fail("reliability.replan", "search re-planning needs a cluster of one node group (this one has " +
                                        std::to_string(cluster.groups.size()) + ")");
  const int world = make_strategy(spec.base)->world_size();
  ReplannedShrink out;
  out.nodes = job_shape(cluster, world).nodes;
  if (out.nodes < 2) base.fail("reliability.replan", "the job runs on one node: no node survives a node's failure");
  const int per_node = cluster.groups[0].devices_per_node;
  const double full = full_width_tokens_per_s(spec.base);

  // 2. One search per survivor count, its devices pinned to the survivors' (ranks 0..n-1: the
  //    nodes are alike, so which ones failed does not matter).
  out.throughput.assign(static_cast<std::size_t>(out.nodes) + 1, 0.0);
  out.plans.assign(static_cast<std::size_t>(out.nodes) + 1, "");
  out.throughput.back() = 1.0;
  const int lowest = std::max(1, out.nodes - simulated);
  search::SearchSettings settings = spec.settings;
  settings.objective = search::Objective::time;
  settings.top_k = 1;
  std::string why_none;  // the largest survivor count's, when no plan fits it
  for (int n = out.nodes; n >= lowest; --n) {  // the full width too: is the scenario's plan the best?
    search::SearchSpace space = spec.space;
    space.nodes.clear();
    space.devices = {n * per_node};
    space.dp.clear();  // follows from the devices
    SimulationEvaluator evaluator(spec.base, usable_cores());
    const search::SearchResult result =
        search::run_search(search::enumerate(space, cluster, spec.base.training), evaluator, settings);
    if (result.ranked.empty()) {  // nothing fits: the job makes no progress at this width
      if (n == out.nodes - 1) why_none = most_common_reason(result);
      continue;
    }
    const search::Scored& best = result.ranked.front();
    out.plans[static_cast<std::size_t>(n)] = best.candidate.key();
    if (n == out.nodes) out.full_width_speedup = best.evaluation.tokens_per_s / full;
    else out.throughput[static_cast<std::size_t>(n)] = std::min(1.0, best.evaluation.tokens_per_s / full);
  }
  if (!(out.throughput[static_cast<std::size_t>(out.nodes - 1)] > 0))
    base.fail("reliability.replan", "the search finds no plan that fits on " + std::to_string(out.nodes - 1) +
                                        " surviving nodes" + why_none);
  // 3. Beyond the simulated widths: in proportion to the nodes, from the smallest simulated that runs.
  int from = lowest;
  while (!(out.throughput[static_cast<std::size_t>(from)] > 0)) ++from;
  for (int n = lowest - 1; n >= 1; --n)
    out.throughput[static_cast<std::size_t>(n)] = out.throughput[static_cast<std::size_t>(from)] * n / from;
  return out;
}

}  // namespace tandem
