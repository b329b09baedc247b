// Runs independent tasks in forked child processes, at most `workers` at a time, each task's
// text result coming back through a pipe. For work that cannot share a process: SimGrid holds
// one engine per process, so every simulation of a search runs in a child of its own.
//
// Results are returned in task order whatever the order the children finish in. A task that
// throws, crashes or is killed yields ok = false with a description; the others are unaffected.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace tandem {

struct ProcessOutcome {
  bool ok = false;
  std::string output;  // what the task returned
  std::string error;   // why it failed (exception message, signal, exit status)
};

// `task(i)` runs in a fresh child for i = 0..count-1; `on_done(i)` is called in the parent as
// each finishes (progress reporting).
std::vector<ProcessOutcome> run_in_processes(std::size_t count, const std::function<std::string(std::size_t)>& task,
                                             int workers, const std::function<void(std::size_t)>& on_done = {});

// Writes all of `data` to a file descriptor (retrying short writes and interruptions); how a
// child hands its result back through a pipe.
void write_fully(int fd, const std::string& data);

// In a forked child: runs `task`, sends '0' + its result or '1' + the error through `fd`, and
// leaves without running the parent's exit handlers (they belong to the parent). Exit status 0
// ok, 3 the task threw, 4 it threw something else than an exception.
[[noreturn]] void finish_child(int fd, const std::function<std::string()>& task);

}  // namespace tandem
