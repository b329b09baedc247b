#include "cli/commands.hpp"

#include <CLI/CLI.hpp>

#include <iostream>

#include "common/input_error.hpp"

namespace tandem::cli {

int run(int argc, char** argv) {
  CLI::App app{"tandem: how to split a model across a cluster, and how fast it will really run"};
  app.require_subcommand(1);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int status = app.exit(e);
    return status == 0 ? 0 : kExitBadInput;
  }
  return 0;
}

}  // namespace tandem::cli
