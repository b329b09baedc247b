// Stopping on Ctrl-C or `kill`: what every `tandem` command does on SIGINT, SIGTERM or SIGHUP.
//
// The signals are blocked in every thread and taken by one watcher thread (sigwait), so no
// signal handler ever runs: SimGrid installs one for SIGINT when its engine starts, which calls
// exit() and deadlocks when the signal lands inside malloc, and other libraries' handlers could
// do the same. On a signal the watcher
//   1. stops the registered child processes (workers are killed, a child running a whole
//      command is asked to stop and cleans up after itself) and reaps them;
//   2. removes the registered temporary files (outputs not yet committed, a checkpoint being
//      written: the target keeps its previous content);
//   3. prints one line ("tandem: interrupted (SIGINT)") and exits with 128 + the signal
//      (130 for SIGINT, 143 for SIGTERM).
// A temporary file is created, and renamed over its target, under the same lock the watcher
// takes, so a file is either registered (and removed by the watcher) or fully renamed; the same
// holds for a child between fork and registration.
//
// Without install() (tests, other programs using the libraries) the registry still works and
// signals keep their usual effect.
#pragma once

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

namespace tandem::interrupts {

// Called first in main. Re-executes the program once (same arguments, same process) when a
// library started threads before main with the signals open (OpenBLAS's pool), so that every
// thread starts with them blocked; then starts the watcher.
void install(char** argv);

// Blocks (unblocks) SIGINT, SIGTERM and SIGHUP in the calling thread. Before a re-execution ahead
// of install() (the tcmalloc preload): the next image starts with them blocked, and a signal
// taken meanwhile stays pending for its watcher instead of killing the process by its default
// action. If the exec fails, unblock them.
void block_stop_signals();
void unblock_stop_signals();

// Called last in main with the command's exit status, returned as is: a stop already under way
// is waited for (its line is printed and it exits 128 + the signal, so a line saying
// "interrupted" never comes with status 0); a signal after this point stops nothing.
int finish(int status);

// --- temporary files ---------------------------------------------------------------------

// Creates (truncates) `path` for writing, registered for removal on a signal. Returns the file
// descriptor, or -1 with errno set.
int create_registered_file(const std::string& path, int mode = 0666);

// Renames each (temporary, target) pair in order and unregisters it; a signal waits until all
// are renamed. Throws std::runtime_error naming the first rename that failed (those before it
// are done, the rest stay registered).
void rename_registered_files(const std::vector<std::pair<std::string, std::string>>& temporary_to_target);

// Removes a registered file (if it exists) and forgets it.
void remove_registered_file(const std::string& path);

// --- child processes ---------------------------------------------------------------------

enum class ChildRole {
  worker,   // computes and returns a result; killed outright (SIGKILL), dies with its parent
  command,  // runs a whole sub-command with outputs of its own: asked to stop (SIGTERM), it
            // cleans up through its own watcher, and is killed if it has not ended in 5 s
};

// fork(), with the child registered in the parent before a signal can be taken. Returns as
// fork() does (-1 with errno on failure). In the child, the registry starts empty (the parent's
// files and children are the parent's) and, for a command, a watcher of its own is started.
pid_t fork_registered(ChildRole role);

// Waits for a registered child to end, reaps it and forgets it; returns its raw wait status.
int wait_registered(pid_t pid);

}  // namespace tandem::interrupts
