#include "cli/compare_command.hpp"
#include "cli/option_ranges.hpp"

#include <iostream>

#include "analysis/compare.hpp"
#include "common/output_set.hpp"

namespace tandem::cli {

CLI::App* add_compare_command(CLI::App& app, CompareCommandOptions& o) {
  CLI::App* cmd = app.add_subcommand("compare", "align a predicted and a measured trace op by op and report the errors");
  cmd->add_option("predicted", o.predicted_path, "predicted trace (tandem simulate --trace)")->required();
  cmd->add_option("measured", o.measured_path, "measured trace (tandem run --trace)")->required();
  cmd->add_option("--json", o.json_path, "write the comparison as JSON to FILE ('-' for stdout)");
  cmd->add_option("--align", o.alignment, "iteration alignment: auto, by-iteration, mean-iteration")
      ->check(CLI::IsMember({"auto", "by-iteration", "mean-iteration"}));
  cmd->add_option("--measured-warmup", o.measured_warmup, "leave out the first N measured iterations")
      ->check(in_range(limits::kWarmupIterations));
  cmd->add_option("--top", o.top, "how many largest per-op differences to list")->check(in_range(kListedRows));
  return cmd;
}

int run_compare(const CompareCommandOptions& o) {
  OutputSet outputs;
  OutputSet::check_writable(o.json_path, "--json");
  CompareOptions options;
  options.measured_warmup_iterations = o.measured_warmup;
  options.largest_differences = static_cast<std::size_t>(o.top);
  if (o.alignment == "by-iteration") options.alignment = IterationAlignment::by_iteration;
  if (o.alignment == "mean-iteration") options.alignment = IterationAlignment::mean_iteration;
  const Comparison comparison = compare_trace_files(o.predicted_path, o.measured_path, options);
  if (o.json_path == "-") {
    std::cout << to_json(comparison).dump(2) << "\n";
    return 0;
  }
  if (!o.json_path.empty()) outputs.stage(o.json_path, to_json(comparison).dump(2) + "\n");
  outputs.commit();
  std::cout << to_text(comparison);
  return 0;
}

}  // namespace tandem::cli
