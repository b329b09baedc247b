// tandem: the command-line front door. Each sub-command is a thin shell over a library call.
#include "cli/commands.hpp"

int main(int argc, char** argv) { return tandem::cli::run(argc, argv); }
