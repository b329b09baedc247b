// tandem: the command-line front door. Each sub-command is a thin shell over a library call.
#include "cli/commands.hpp"
#include "common/interrupts.hpp"

int main(int argc, char** argv) {
  // First: Ctrl-C and kill stop any command cleanly (children reaped, temporary files removed).
  tandem::interrupts::install(argv);
  return tandem::cli::run(argc, argv);
}
