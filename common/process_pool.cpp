#include "common/process_pool.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <stdexcept>

#include "common/interrupts.hpp"

namespace tandem {

namespace {

struct Child {
  std::size_t task;
  pid_t pid;
  int fd;
  std::string data;
};

ProcessOutcome reap(Child& child) {
  ::close(child.fd);
  const int status = interrupts::wait_registered(child.pid);
  ProcessOutcome out;
  if (!child.data.empty() && child.data[0] == '0' && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    out.ok = true;
    out.output = child.data.substr(1);
  } else if (!child.data.empty() && child.data[0] == '1') {
    out.error = child.data.substr(1);
  } else if (WIFSIGNALED(status)) {
    out.error = std::string("worker process killed by signal ") + std::to_string(WTERMSIG(status)) + " (" +
                strsignal(WTERMSIG(status)) + ")";
  } else {
    out.error = "worker process exited with status " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) +
                " without a result";
  }
  return out;
}

}  // namespace

void finish_child(int fd, const std::function<std::string()>& task) {
  std::string message;
  int code = 0;
  try {
    message = "0" + task();
  } catch (const std::exception& e) {
    message = std::string("1") + e.what();
    code = 3;
  } catch (...) {
    message = "1unknown exception";
    code = 4;
  }
  write_fully(fd, message);
  ::close(fd);
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  ::_exit(code);
}

void write_fully(int fd, const std::string& data) {
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<std::size_t>(n);
  }
}

std::vector<ProcessOutcome> run_in_processes(std::size_t count, const std::function<std::string(std::size_t)>& task,
                                             int workers, const std::function<void(std::size_t)>& on_done) {
  if (workers < 1) throw std::invalid_argument("at least one worker process");
  std::vector<ProcessOutcome> outcomes(count);
  std::vector<Child> running;
  std::size_t next = 0;
  try {
    while (next < count || !running.empty()) {
      while (next < count && static_cast<int>(running.size()) < workers) {
        int fds[2];
        if (::pipe(fds) != 0) throw std::runtime_error(std::string("pipe failed: ") + std::strerror(errno));
        std::cout.flush();
        std::cerr.flush();
        std::fflush(nullptr);
        // Registered: a signal to the parent kills and reaps the running workers.
        const pid_t pid = interrupts::fork_registered(interrupts::ChildRole::worker);
        if (pid < 0) throw std::runtime_error(std::string("fork failed: ") + std::strerror(errno));
        if (pid == 0) {
          ::close(fds[0]);
          for (const Child& c : running) ::close(c.fd);  // siblings' pipes are not ours
          finish_child(fds[1], [&] { return task(next); });
        }
        ::close(fds[1]);
        running.push_back({next++, pid, fds[0], {}});
      }
      std::vector<pollfd> polls;
      for (const Child& c : running) polls.push_back({c.fd, POLLIN, 0});
      if (::poll(polls.data(), polls.size(), -1) < 0) {
        if (errno == EINTR) continue;
        throw std::runtime_error(std::string("poll failed: ") + std::strerror(errno));
      }
      for (std::size_t k = running.size(); k-- > 0;) {
        if (polls[k].revents == 0) continue;
        char buffer[65536];
        const ssize_t n = ::read(running[k].fd, buffer, sizeof buffer);
        if (n < 0 && errno == EINTR) continue;
        if (n > 0) {
          running[k].data.append(buffer, static_cast<std::size_t>(n));
          continue;
        }
        const std::size_t i = running[k].task;  // end of file: the child is done
        outcomes[i] = reap(running[k]);
        running.erase(running.begin() + static_cast<std::ptrdiff_t>(k));
        if (on_done) on_done(i);
      }
    }
  } catch (...) {
    // Failing half-way (no pipe, no fork, on_done threw): no worker is left simulating.
    for (const Child& c : running) {
      ::kill(c.pid, SIGKILL);
      ::close(c.fd);
      interrupts::wait_registered(c.pid);
    }
    throw;
  }
  return outcomes;
}

}  // namespace tandem
