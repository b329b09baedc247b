// tandem: the command-line front door. Each sub-command is a thin shell over a library call.
#include "cli/commands.hpp"
#include "cli/fast_allocator.hpp"
#include "common/interrupts.hpp"

int main(int argc, char** argv) {
  // Before anything: a heavy command runs again with tcmalloc preloaded (fast_allocator.hpp).
  tandem::cli::use_fast_allocator(argc, argv);
  // First: Ctrl-C and kill stop any command cleanly (children reaped, temporary files removed).
  tandem::interrupts::install(argv);
  return tandem::interrupts::finish(tandem::cli::run(argc, argv));
}
