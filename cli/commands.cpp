#include "cli/commands.hpp"

#include <CLI/CLI.hpp>

#include <exception>
#include <iostream>

#include "cli/calibrate_command.hpp"
#include "cli/check_command.hpp"
#include "cli/compare_command.hpp"
#include "cli/convergence_command.hpp"
#include "cli/goodput_command.hpp"
#include "cli/guarded.hpp"
#include "cli/job_command.hpp"
#include "cli/report_command.hpp"
#include "cli/run_command.hpp"
#include "cli/search_command.hpp"
#include "cli/simulate_command.hpp"
#include "cli/validate_command.hpp"
#include "common/input_error.hpp"
#include "strategies/strategy.hpp"

namespace tandem::cli {

int run(int argc, char** argv) {
  CLI::App app{"tandem: how to split a model across a cluster, and how fast it will really run"};
  app.require_subcommand(1);
  SimulateOptions simulate;
  CLI::App* simulate_cmd = add_simulate_command(app, simulate);
  RunCommandOptions run_options;
  CLI::App* run_cmd = add_run_command(app, run_options);
  CompareCommandOptions compare;
  CLI::App* compare_cmd = add_compare_command(app, compare);
  ReportCommandOptions report;
  CLI::App* report_cmd = add_report_command(app, report);
  CalibrateOptions calibrate_options;
  CLI::App* calibrate_cmd = add_calibrate_command(app, calibrate_options);
  SearchOptions search_options;
  CLI::App* search_cmd = add_search_command(app, search_options);
  JobOptions job_options;
  CLI::App* job_cmd = add_job_command(app, job_options);
  ValidateOptions validate_options;
  CLI::App* validate_cmd = add_validate_command(app, validate_options);
  GoodputOptions goodput_options;
  CLI::App* goodput_cmd = add_goodput_command(app, goodput_options);
  ConvergenceOptions convergence_options;
  CLI::App* convergence_cmd = add_convergence_command(app, convergence_options);
  CheckOptions check_options;
  CLI::App* check_cmd = add_check_command(app, check_options);
  FieldsOptions fields_options;
  CLI::App* fields_cmd = add_fields_command(app, fields_options);
  ExplainOptions explain_options;
  CLI::App* explain_cmd = add_explain_command(app, explain_options);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    // One line, like every other input error (CLI11's own print adds a second one).
    std::cerr << "tandem: " << InputError("command line", 0, "", std::string(e.what()) + " (see tandem --help)").what()
              << "\n";
    return kExitBadInput;
  }
  if (check_cmd->parsed()) return run_check(check_options);  // guards each file itself
  return run_guarded([&] {
    if (simulate_cmd->parsed()) return run_simulate(simulate);
    if (run_cmd->parsed()) return run_run(run_options);
    if (search_cmd->parsed()) return run_search_command(search_options);
    if (job_cmd->parsed()) return run_job(job_options);
    if (calibrate_cmd->parsed()) return run_calibrate(calibrate_options);
    if (compare_cmd->parsed()) return run_compare(compare);
    if (report_cmd->parsed()) return run_report(report);
    if (validate_cmd->parsed()) return run_validate(validate_options);
    if (goodput_cmd->parsed()) return run_goodput(goodput_options);
    if (convergence_cmd->parsed()) return run_convergence(convergence_options);
    if (fields_cmd->parsed()) return run_fields(fields_options);
    if (explain_cmd->parsed()) return run_explain(explain_options);
    return 0;
  });
}

}  // namespace tandem::cli
