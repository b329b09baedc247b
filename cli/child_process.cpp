#include "cli/child_process.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <iostream>
#include <stdexcept>

#include "cli/guarded.hpp"

namespace tandem::cli {

int run_step_in_child(const std::function<int()>& step, const std::string& stdout_log) {
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  const pid_t pid = ::fork();
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
  int raw = 0;
  while (::waitpid(pid, &raw, 0) < 0)
    if (errno != EINTR) throw std::runtime_error("lost a job step's child process");
  if (WIFEXITED(raw)) return WEXITSTATUS(raw);
  std::cerr << "tandem: a job step ended with signal " << WTERMSIG(raw) << "\n";
  return 1;
}

}  // namespace tandem::cli
