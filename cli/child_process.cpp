#include "cli/child_process.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <stdexcept>

#include "cli/guarded.hpp"
#include "common/interrupts.hpp"

namespace tandem::cli {

int run_step_in_child(const std::function<int()>& step, const std::string& stdout_log) {
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  // A command of its own: on a signal the parent asks it to stop, and it removes its own
  // temporary files before the parent reaps it.
  const pid_t pid = interrupts::fork_registered(interrupts::ChildRole::command);
  if (pid < 0) throw std::runtime_error("cannot start a child process for a job step");
  if (pid == 0) {
    const int fd = ::open(stdout_log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      ::dup2(fd, STDOUT_FILENO);
      ::close(fd);
    }
    const int status = run_guarded(step);
    std::cout.flush();
    std::cerr.flush();
    std::fflush(nullptr);
    ::_exit(status);
  }
  const int raw = interrupts::wait_registered(pid);
  if (WIFEXITED(raw)) return WEXITSTATUS(raw);
  std::cerr << "tandem: a job step ended with signal " << WTERMSIG(raw) << "\n";
  return 1;
}

}  // namespace tandem::cli
