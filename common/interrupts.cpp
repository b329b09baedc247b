#include "common/interrupts.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/ucontext.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <thread>

namespace tandem::interrupts {

namespace {

struct Registry {
  std::mutex mutex;
  std::vector<std::string> files;
  std::vector<std::pair<pid_t, ChildRole>> children;
  bool finishing = false;  // the command returned from its work (finish()): a signal now changes nothing
};

// Never destroyed: the watcher may need it while static destructors run. A forked child gets a
// fresh one (the parent's was locked by the forking thread, and its entries are the parent's).
Registry* g_registry = new Registry;
bool g_watching = false;  // install() ran in this process (or its parent command)
bool g_announce = true;   // a command's child stays silent: its parent says the one line

constexpr int kStopSignals[] = {SIGINT, SIGTERM, SIGHUP};
constexpr auto kCommandGrace = std::chrono::seconds(5);

sigset_t stop_signal_set() {
  sigset_t set;
  sigemptyset(&set);
  for (int s : kStopSignals) sigaddset(&set, s);
  return set;
}

// The stop signals this process should act on: one ignored when we started (`nohup`, a
// background job of a script) stays ignored; it is blocked all the same, so that the handler a
// library installs later never runs.
sigset_t watched_signal_set() {
  sigset_t set;
  sigemptyset(&set);
  for (int s : kStopSignals) {
    struct sigaction current {};
    if (::sigaction(s, nullptr, &current) == 0 && current.sa_handler == SIG_IGN) continue;
    sigaddset(&set, s);
  }
  return set;
}

int thread_count() {
  DIR* dir = ::opendir("/proc/self/task");
  if (dir == nullptr) return 1;
  int n = 0;
  while (const dirent* entry = ::readdir(dir))
    if (entry->d_name[0] != '.') ++n;
  ::closedir(dir);
  return n;
}

void write_stderr(const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(STDERR_FILENO, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<std::size_t>(n);
  }
}

// Kills the workers, asks the commands to stop, and reaps them all (commands that have not
// ended after the grace period are killed).
void stop_children(std::vector<std::pair<pid_t, ChildRole>> children) {
  for (const auto& [pid, role] : children) ::kill(pid, role == ChildRole::command ? SIGTERM : SIGKILL);
  auto deadline = std::chrono::steady_clock::now() + kCommandGrace;
  while (!children.empty()) {
    std::erase_if(children, [](const auto& child) {
      int status = 0;
      const pid_t r = ::waitpid(child.first, &status, WNOHANG);
      return r == child.first || (r < 0 && errno == ECHILD);
    });
    if (children.empty()) break;
    if (std::chrono::steady_clock::now() > deadline) {
      for (const auto& child : children) ::kill(child.first, SIGKILL);
      deadline = std::chrono::steady_clock::time_point::max();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

void stop_process(int signal) {
  Registry& r = *g_registry;
  r.mutex.lock();  // kept: nothing is created, renamed or forked after this point
  if (r.finishing) {  // the command is done and exits with its own status: nothing left to stop
    r.mutex.unlock();
    return;
  }
  stop_children(r.children);
  for (const std::string& file : r.files) ::unlink(file.c_str());
  const char* name = signal == SIGINT ? "SIGINT" : signal == SIGTERM ? "SIGTERM" : signal == SIGHUP ? "SIGHUP" : "signal";
  if (g_announce) write_stderr(std::string("tandem: interrupted (") + name + ")\n");
  ::_exit(128 + signal);
}

void start_watcher() {
  g_watching = true;
  const sigset_t watched = watched_signal_set();
  std::thread([watched] {
    int signal = 0;
    while (::sigwait(&watched, &signal) != 0) {
    }
    stop_process(signal);
  }).detach();
}

// Between blocking the signals in main and the re-execution, a thread started before main
// would take a stop signal by its default action (or a library's handler): this handler blocks
// it in that thread and raises it again, so that it waits, pending, for the watcher of the
// re-executed program (execve keeps pending signals).
void defer_to_the_next_image(int signal, siginfo_t*, void* context) {
  sigaddset(&static_cast<ucontext_t*>(context)->uc_sigmask, signal);  // the thread's mask on return
  ::kill(::getpid(), signal);
}

}  // namespace

void block_stop_signals() {
  const sigset_t stop = stop_signal_set();
  ::pthread_sigmask(SIG_BLOCK, &stop, nullptr);
}

void unblock_stop_signals() {
  const sigset_t stop = stop_signal_set();
  ::pthread_sigmask(SIG_UNBLOCK, &stop, nullptr);
}

int finish(int status) {
  Registry& r = *g_registry;
  // A stop under way holds the lock to the end: wait for it (it exits 128 + the signal, as its
  // line says). Otherwise a later signal finds the command finishing and leaves it be.
  std::lock_guard<std::mutex> lock(r.mutex);
  r.finishing = true;
  return status;
}

void install(char** argv) {
  const sigset_t stop = stop_signal_set();
  sigset_t before;
  ::pthread_sigmask(SIG_BLOCK, nullptr, &before);
  bool inherited_blocked = true;
  for (int s : kStopSignals) inherited_blocked = inherited_blocked && sigismember(&before, s) == 1;
  // Threads started before main (by shared libraries' constructors) have the signals open and
  // would run whatever handler is installed then; a re-execution starts them blocked (execve
  // keeps the mask). Until it happens, a signal is deferred to it (the handler is installed
  // before the mask, so no moment is left uncovered). If it fails, the watcher takes it.
  if (!inherited_blocked && thread_count() > 1) {
    const sigset_t watched = watched_signal_set();
    struct sigaction defer {};
    defer.sa_sigaction = defer_to_the_next_image;
    defer.sa_flags = SA_SIGINFO | SA_RESTART;
    sigfillset(&defer.sa_mask);
    for (int s : kStopSignals)
      if (sigismember(&watched, s) == 1) ::sigaction(s, &defer, nullptr);
    ::pthread_sigmask(SIG_BLOCK, &stop, nullptr);
    ::execv("/proc/self/exe", argv);  // a successful exec resets the handlers to the default
  }
  ::pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  start_watcher();
}

int create_registered_file(const std::string& path, int mode) {
  Registry& r = *g_registry;
  std::lock_guard<std::mutex> lock(r.mutex);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  const int saved = errno;
  if (fd >= 0) r.files.push_back(path);
  errno = saved;
  return fd;
}

void rename_registered_files(const std::vector<std::pair<std::string, std::string>>& temporary_to_target) {
  Registry& r = *g_registry;
  std::string failure;
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    for (const auto& [temporary, target] : temporary_to_target) {
      if (::rename(temporary.c_str(), target.c_str()) != 0) {
        failure = "cannot rename " + temporary + " to " + target + ": " + std::strerror(errno);
        break;
      }
      std::erase(r.files, temporary);
    }
  }
  if (!failure.empty()) throw std::runtime_error(failure);
}

void remove_registered_file(const std::string& path) {
  Registry& r = *g_registry;
  std::lock_guard<std::mutex> lock(r.mutex);
  ::unlink(path.c_str());
  std::erase(r.files, path);
}

pid_t fork_registered(ChildRole role) {
  Registry& r = *g_registry;
  const pid_t parent = ::getpid();
  r.mutex.lock();
  const pid_t pid = ::fork();
  if (pid == 0) {
    g_registry = new Registry;
    // A child must not outlive its parent: a killed search would leave its workers simulating.
    ::prctl(PR_SET_PDEATHSIG, role == ChildRole::worker ? SIGKILL : SIGTERM);
    if (::getppid() != parent) ::_exit(1);  // the parent died before prctl took effect
    if (role == ChildRole::command && g_watching) {
      g_announce = false;
      start_watcher();
    }
    return 0;
  }
  const int saved = errno;
  if (pid > 0) r.children.emplace_back(pid, role);
  r.mutex.unlock();
  errno = saved;
  return pid;
}

int wait_registered(pid_t pid) {
  // Wait without reaping, then reap under the lock: the watcher never signals a reaped pid
  // (which the system may already have given to another process).
  siginfo_t info{};
  while (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT) != 0 && errno == EINTR) {
  }
  Registry& r = *g_registry;
  std::lock_guard<std::mutex> lock(r.mutex);
  int status = 0;
  pid_t reaped;
  while ((reaped = ::waitpid(pid, &status, 0)) < 0 && errno == EINTR) {
  }
  std::erase_if(r.children, [pid](const auto& child) { return child.first == pid; });
  if (reaped < 0) throw std::runtime_error("lost child process " + std::to_string(pid) + ": " + std::strerror(errno));
  return status;
}

}  // namespace tandem::interrupts
