// The sub-commands of `tandem`. Each returns the process exit status: 0 on success,
// kExitBadInput (2) on bad input (after printing one line naming file, line and field), 1 on
// any other failure.
#pragma once

namespace tandem::cli {

int run(int argc, char** argv);

}  // namespace tandem::cli
