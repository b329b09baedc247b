#include "cli/commands.hpp"

#include <CLI/CLI.hpp>

#include <exception>
#include <iostream>

#include "cli/run_command.hpp"
#include "cli/search_command.hpp"
#include "cli/simulate_command.hpp"
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
  SearchOptions search_options;
  CLI::App* search_cmd = add_search_command(app, search_options);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int status = app.exit(e);
    return status == 0 ? 0 : kExitBadInput;
  }
  try {
    if (simulate_cmd->parsed()) return run_simulate(simulate);
    if (run_cmd->parsed()) return run_run(run_options);
    if (search_cmd->parsed()) return run_search_command(search_options);
  } catch (const InputError& e) {
    std::cerr << "tandem: " << e.what() << "\n";
    return kExitBadInput;
  } catch (const StrategyError& e) {
    std::cerr << "tandem: impossible strategy: " << e.field() << ": " << e.what() << "\n";
    return kExitBadInput;
  } catch (const std::exception& e) {
    std::cerr << "tandem: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

}  // namespace tandem::cli
