#include "cli/search_command.hpp"
#include "cli/option_ranges.hpp"

#include <chrono>
#include <filesystem>
#include <iostream>
#include <thread>

#include "analysis/format.hpp"
#include "analysis/search_report.hpp"
#include "analysis/trace.hpp"
#include "cli/search_progress.hpp"
#include "common/input_error.hpp"
#include "common/output_set.hpp"
#include "platforms/cluster_selection.hpp"
#include "scenarios/candidate_scenario.hpp"
#include "scenarios/scenario_writer.hpp"
#include "scenarios/search_evaluator.hpp"
#include "scenarios/search_spec.hpp"
#include "sim/collectives/nccl_fabric.hpp"
#ifdef TANDEM_HAVE_MPI
#include "distributed/mpi_search.hpp"
#endif

namespace tandem::cli {

CLI::App* add_search_command(CLI::App& app, SearchOptions& o) {
  CLI::App* cmd = app.add_subcommand("search", "find the best strategies of a scenario's search space in the simulator");
  cmd->add_option("scenario", o.scenario, "scenario file with a search: section, or a bundled scenario's name")->required();
  cmd->add_option("--workers", o.workers, "worker processes simulating in parallel (default: one per core)")
      ->check(in_range(kWorkers));
  cmd->add_option("--top", o.top_k, "how many strategies to rank")->check(in_range(limits::kTopK));
  cmd->add_option("--objective", o.objective, "time, cost or energy (per iteration), time_to_train or time_to_target_loss");
  cmd->add_option("--algorithm", o.algorithm, "auto, exhaustive or guided");
  cmd->add_option("--max-evaluations", o.max_evaluations, "guided search: simulations at most")->check(in_range(limits::kEvaluations));
  cmd->add_option("--json", o.json_path, "write the report as JSON to FILE ('-' for stdout)");
  cmd->add_option("--winner", o.winner_path, "write the best strategy as a scenario file (for simulate and run)");
#ifdef TANDEM_HAVE_MPI
  cmd->add_flag("--mpi", o.mpi, "under mpirun: rank 0 searches, ranks 1..N-1 simulate");
#endif
  return cmd;
}

int run_search_command(const SearchOptions& o) {
  OutputSet outputs;
  OutputSet::check_writable(o.json_path, "--json");
  OutputSet::check_writable(o.winner_path, "--winner");
  std::optional<search::Objective> objective;
  std::optional<search::Algorithm> algorithm;
  try {
    if (!o.objective.empty()) objective = search::parse_objective(o.objective);
    if (!o.algorithm.empty()) algorithm = search::parse_algorithm(o.algorithm);
  } catch (const std::invalid_argument& e) {
    throw InputError("command line", 0, "", e.what());
  }
  SearchScenario spec = load_search_scenario(o.scenario, objective);
  search::SearchSettings& settings = spec.settings;
  if (algorithm) settings.algorithm = *algorithm;
  if (o.top_k) settings.top_k = *o.top_k;
  if (o.max_evaluations) settings.max_evaluations = *o.max_evaluations;
  if (settings.objective == search::Objective::cost && !all_priced(spec))
    throw InputError("command line", 0, "--objective", "the cost objective needs a price_per_hour_usd in every device profile");
  const int workers = o.workers > 0 ? o.workers : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  settings.batch_size = std::max(settings.batch_size, 2 * workers);  // keeps every worker busy

  const auto start = std::chrono::steady_clock::now();
  SearchProgressPrinter progress(settings.objective, workers);
  SimulationEvaluator local(spec.base, workers, [&] { progress.simulated_one(); }, spec.reliability, spec.convergence);
  search::Evaluator* evaluator = &local;
#ifdef TANDEM_HAVE_MPI
  std::optional<distributed::MpiSession> mpi;
  std::optional<distributed::MpiEvaluator> remote;
  if (o.mpi) {
    mpi.emplace();
    if (mpi->rank() != 0) {
      SimulationEvaluator one(spec.base, 1, {}, spec.reliability, spec.convergence);
      distributed::serve_candidates(one);
      return 0;
    }
    remote.emplace(*mpi, local, [&] { progress.simulated_one(); });
    evaluator = &*remote;
    settings.batch_size = std::max(settings.batch_size, 2 * (mpi->size() - 1));
  }
#endif
  const search::Enumeration space = search::enumerate(spec.space, spec.base.cluster, spec.base.training);
  progress.bounding(space.candidates.size());
  const search::SearchResult result =
      search::run_search(space, *evaluator, settings, [&](const search::SearchProgress& p) { progress.update(p); });
  progress.finish();

  analysis::SearchReportContext ctx;
  ctx.scenario = spec.base.name;
  ctx.model = spec.base.model.name();
  ctx.cluster = spec.base.cluster.name;
  ctx.heterogeneous = spec.base.cluster.is_heterogeneous();
  for (const auto& g : spec.base.cluster.groups) ctx.profiles.push_back(g.device.name + ": " + g.device.basis_text());
  ctx.collectives = sim::collectives_basis(spec.base.cluster);
  if (spec.convergence && settings.objective == search::Objective::time_to_target_loss) {
    ctx.objective_basis = "steps to loss " + printf_string("%g", spec.convergence->target_loss) + " measured on " +
                          spec.convergence->model + " (" + spec.convergence->file +
                          "), standing for this model's steps; the step time is simulated";
    ctx.target_loss = spec.convergence->target_loss;
    for (const search::Scored& s : result.all) {
      const ConvergenceVariant* v = spec.convergence->find(convergence_key(scenario_for(spec.base, s.candidate).parallel));
      if (v) ctx.loss_per_step[s.candidate.key()] = v->losses;
    }
  }
  ctx.workers = workers;
#ifdef TANDEM_HAVE_MPI
  if (mpi) ctx.workers = mpi->size() - 1;  // MPI ranks simulating
#endif
  ctx.wall_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // No feasible strategy is a failed search: the previous --json and --winner stay as they were.
  const bool found = !result.ranked.empty();
  if (found && !o.winner_path.empty()) {
    const search::Scored& best = result.ranked.front();
    Scenario winner = scenario_for(spec.base, best.candidate);
    if (!best.candidate.nodes.empty()) {
      // A plan on part of the cluster: that part as a cluster file beside the scenario.
      const std::filesystem::path cluster_path =
          std::filesystem::absolute(std::filesystem::path(o.winner_path).replace_extension(".cluster.yaml"));
      outputs.stage(cluster_path.string(), selected_cluster_yaml(spec.base.cluster, best.candidate.nodes));
      winner.cluster.file = cluster_path.string();
    }
    winner.name = spec.base.name + "-winner";
    winner.description = "found by tandem search (" + std::string(to_string(settings.objective)) + "): " + best.candidate.key();
    outputs.stage(o.winner_path,
                  scenario_yaml(winner, "Written by `tandem search " + o.scenario + "`: the best strategy for " +
                                            to_string(settings.objective) + ".\nPredicted iteration time " +
                                            std::to_string(best.evaluation.iteration_time_s) +
                                            " s; `tandem simulate` this file to see it all."));
    ctx.winner_file = o.winner_path;
  }
  if (found && !o.json_path.empty() && o.json_path != "-")
    outputs.stage(o.json_path, analysis::search_report_json(result, ctx).dump(2) + "\n");
  if (found) outputs.commit();
  if (o.json_path == "-") {
    std::cout << analysis::search_report_json(result, ctx).dump(2) << "\n";
  } else {
    std::cout << analysis::search_report_text(result, ctx);
  }
  return found ? 0 : 1;
}

}  // namespace tandem::cli
