// Running one step of a longer job in a child process: SimGrid allows one engine per process and
// the CPU backend starts threads, so each simulate / run / search step of `tandem job` gets a
// fresh process (fork, no exec: the same binary, the same library calls as its sub-command).
#pragma once

#include <functional>
#include <string>

namespace tandem::cli {

// Runs `step` (a sub-command body, guarded: bad input is 2) in a forked child whose standard
// output is appended to `stdout_log` (standard error stays on the terminal, for progress and
// errors). Returns the child's exit status; a child killed by a signal is reported as 1.
int run_step_in_child(const std::function<int()>& step, const std::string& stdout_log);

}  // namespace tandem::cli
