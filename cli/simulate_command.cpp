#include "cli/simulate_command.hpp"
#include "cli/option_ranges.hpp"

#include <iostream>

#include "analysis/chrome_trace.hpp"
#include "analysis/trace.hpp"
#include "cli/trace_outputs.hpp"
#include "common/input_error.hpp"
#include "common/output_set.hpp"
#include "scenarios/prediction_inputs.hpp"
#include "scenarios/scenario.hpp"
#include "scenarios/scenario_limits.hpp"
#include "sim/prediction.hpp"
#include "sim/simulation.hpp"

namespace tandem::cli {

CLI::App* add_simulate_command(CLI::App& app, SimulateOptions& o) {
  CLI::App* cmd = app.add_subcommand("simulate", "predict iteration time, memory and energy of a scenario");
  cmd->add_option("scenario", o.scenario, "scenario file, or the name of a bundled scenario")->required();
  cmd->add_option("--json", o.json_path, "write the prediction as JSON to FILE ('-' for stdout)");
  // As `tandem run` names them: --trace the Tandem-schema trace that compare and report read,
  // --chrome-trace the Perfetto timeline (--tandem-trace: the former name of --trace).
  cmd->add_option("--trace,--tandem-trace", o.trace_path, "write the predicted trace (Tandem schema) to FILE");
  cmd->add_option("--chrome-trace", o.chrome_trace_path, "write a Chrome-trace/Perfetto timeline to FILE");
  cmd->add_option("--trace-ranks", o.trace_ranks, "only these ranks in the traces: 0-7,32 (default: all)");
  cmd->add_option("--iterations", o.iterations, "measured iterations")->check(in_range(limits::kIterations));
  cmd->add_option("--warmup", o.warmup, "warm-up iterations before measuring")->check(in_range(limits::kWarmupIterations));
  cmd->add_option("--algorithm", o.algorithm, "collective algorithm: auto, ring, tree, hierarchical, direct");
  cmd->add_option("--fidelity", o.fidelity, "collective fidelity: auto, exact, aggregated");
  cmd->add_option("--compute-fidelity", o.compute_fidelity, "compute fidelity: fused, per_op");
  cmd->add_option("--replica-folding", o.replica_folding,
                  "simulate one block of identical data-parallel replicas and mirror the rest: auto, off");
  cmd->add_option("--tensor-folding", o.tensor_folding,
                  "simulate one member of each tensor-parallel group and mirror the rest: auto, off");
  cmd->add_option("--pipeline-extrapolation", o.pipeline_extrapolation,
                  "simulate two shorter iterations of a periodic pipeline and extrapolate: auto, off");
  cmd->add_flag("--free-overlap", o.free_overlap,
                "kernels overlapping an NCCL collective keep every SM and all the HBM bandwidth (what-if; by default they get what it leaves)");
  return cmd;
}

int run_simulate(const SimulateOptions& o) {
  // 1. Load and validate the scenario and the outputs' places (bad input throws InputError,
  // turned into exit 2 above), before any simulating.
  OutputSet outputs;
  OutputSet::check_writable(o.json_path, "--json");
  OutputSet::check_writable(o.trace_path, "--trace");
  OutputSet::check_writable(o.chrome_trace_path, "--chrome-trace");
  Scenario scenario = load_scenario(o.scenario);
  sim::SimulationOptions options = scenario.simulation;
  if (o.iterations) options.iterations = *o.iterations;
  if (o.warmup) options.warmup_iterations = *o.warmup;
  try {
    if (!o.algorithm.empty()) options.algorithm = sim::parse_collective_algorithm(o.algorithm);
    if (!o.fidelity.empty()) options.collective_fidelity = sim::parse_collective_fidelity(o.fidelity);
    if (!o.compute_fidelity.empty()) options.compute_fidelity = sim::parse_compute_fidelity(o.compute_fidelity);
    if (!o.replica_folding.empty()) options.replica_folding = sim::parse_replica_folding(o.replica_folding);
    if (!o.tensor_folding.empty()) options.tensor_folding = sim::parse_folding_mode(o.tensor_folding);
    if (!o.pipeline_extrapolation.empty())
      options.pipeline_extrapolation = sim::parse_folding_mode(o.pipeline_extrapolation);
  } catch (const std::invalid_argument& e) {
    throw InputError("command line", 0, "", e.what());
  }
  if (o.free_overlap) options.comm_contention = false;
  options.record_trace = !o.chrome_trace_path.empty() || !o.trace_path.empty();
  check_simulation_size(scenario, options);  // the command line's iterations and trace weigh in

  // 2. Simulate.
  auto strategy = make_strategy(scenario);
  const TraceOutputs traces{o.trace_path, o.chrome_trace_path, o.trace_ranks};
  check_trace_outputs(traces, strategy->world_size());
  const sim::SimulationResult result = sim::simulate(*strategy, scenario.cluster, options);

  // 3. Report.
  const sim::Prediction prediction = sim::summarize(result, scenario.cluster, prediction_inputs(scenario, *strategy));

  Trace trace = result.trace;
  trace.scenario = scenario.name;
  if (!o.json_path.empty() && o.json_path != "-") outputs.stage(o.json_path, sim::to_json(prediction).dump(2) + "\n");
  stage_trace_outputs(outputs, std::move(trace), scenario.cluster, *strategy, traces);
  outputs.commit();
  if (o.json_path == "-") {
    std::cout << sim::to_json(prediction).dump(2) << "\n";
  } else {
    std::cout << sim::to_text(prediction);
    if (!o.chrome_trace_path.empty()) std::cout << "timeline    " << o.chrome_trace_path << "\n";
  }
  return 0;
}

}  // namespace tandem::cli
