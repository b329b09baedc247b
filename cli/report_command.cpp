#include "cli/report_command.hpp"
#include "cli/option_ranges.hpp"

#include <iostream>

#include "analysis/chrome_trace.hpp"
#include "common/input_error.hpp"
#include "common/output_set.hpp"

namespace tandem::cli {

CLI::App* add_report_command(CLI::App& app, ReportCommandOptions& o) {
  CLI::App* cmd = app.add_subcommand("report", "write a self-contained HTML report (plots) of traces, predictions and searches");
  cmd->add_option("--predicted-trace", o.files.predicted_trace, "predicted trace (tandem simulate --trace)");
  cmd->add_option("--measured-trace", o.files.measured_trace, "measured trace (tandem run --trace)");
  cmd->add_option("--prediction", o.files.prediction, "prediction JSON (tandem simulate --json)");
  cmd->add_option("--measured-summary", o.files.measured_summary, "measured run summary JSON (tandem run --json)");
  cmd->add_option("--search", o.files.search, "search results JSON (schema tandem-search/1)");
  cmd->add_option("--goodput", o.files.goodput, "goodput estimate JSON (tandem goodput --json): timeline, time lost, interval sweep");
  cmd->add_option("-o,--output", o.output_path, "the HTML file to write (default report.html)");
  cmd->add_option("--perfetto", o.perfetto_path, "also write both traces as one Perfetto/Chrome-trace JSON to FILE");
  cmd->add_option("--measured-warmup", o.measured_warmup, "leave out the first N measured iterations from the comparison")
      ->check(in_range(limits::kWarmupIterations));
  return cmd;
}

int run_report(const ReportCommandOptions& o) {
  OutputSet outputs;
  OutputSet::check_writable(o.output_path, "--output");
  OutputSet::check_writable(o.perfetto_path, "--perfetto");
  CompareOptions compare;
  compare.measured_warmup_iterations = o.measured_warmup;
  const report::ReportInputs inputs = report::load_report_inputs(o.files, compare);
  if (!o.perfetto_path.empty() && !(inputs.predicted_trace && inputs.measured_trace))
    throw InputError("command line", 0, "--perfetto", "needs both --predicted-trace and --measured-trace");
  outputs.stage(o.output_path, report::render_report_html(inputs));
  if (!o.perfetto_path.empty())
    outputs.stage(o.perfetto_path, chrome_trace_pair_json(*inputs.predicted_trace, *inputs.measured_trace));
  outputs.commit();
  std::cout << "report      " << o.output_path << "\n";
  if (!o.perfetto_path.empty()) std::cout << "timeline    " << o.perfetto_path << "\n";
  return 0;
}

}  // namespace tandem::cli
