// The real `tandem` binary started in the background, for tests that signal it mid-work: its
// standard output and error go to files, its child processes can be listed, and waiting for it
// has a generous limit (a slow, shared machine) after which it is killed and the test fails.
#pragma once

#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/cli/cli_test_support.hpp"

namespace tandem::cli_test {

class SpawnedTandem {
 public:
  // `own_group`: the process leads a process group of its own, which its children join, so a
  // test can signal all of them at once as a terminal's Ctrl-C does (signal_group).
  SpawnedTandem(const std::vector<std::string>& args, const std::filesystem::path& log_dir, bool own_group = false)
      : out_path_(log_dir / "stdout.txt"), err_path_(log_dir / "stderr.txt") {
    const std::string binary = tandem_binary();
    std::vector<std::string> argv_text{binary};
    argv_text.insert(argv_text.end(), args.begin(), args.end());
    pid_ = ::fork();
    if (pid_ == 0) {
      if (own_group) ::setpgid(0, 0);
      std::freopen(out_path_.c_str(), "w", stdout);
      std::freopen(err_path_.c_str(), "w", stderr);
      std::vector<char*> argv;
      for (std::string& a : argv_text) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(binary.c_str(), argv.data());
      ::_exit(127);
    }
  }
  ~SpawnedTandem() {
    if (!status_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }

  pid_t pid() const { return pid_; }
  void signal(int sig) const { ::kill(pid_, sig); }
  // To the whole process group (own_group): the command and every child it started.
  void signal_group(int sig) const { ::kill(-pid_, sig); }

  // The processes whose parent is this tandem (from /proc).
  std::vector<pid_t> children() const { return children_of(pid_); }

  // Children, their children, and so on (a snapshot: taken before a signal, the processes to
  // check for afterwards, when orphans would no longer point back to this tandem).
  std::vector<pid_t> descendants() const {
    std::vector<pid_t> all;
    std::vector<pid_t> parents{pid_};
    while (!parents.empty()) {
      std::vector<pid_t> next;
      for (pid_t parent : parents)
        for (pid_t child : children_of(parent)) next.push_back(child);
      all.insert(all.end(), next.begin(), next.end());
      parents = std::move(next);
    }
    return all;
  }

  // Polls `ready` until true or the process ends; false if it ended (or the limit passed) first.
  bool wait_until(const std::function<bool()>& ready, std::chrono::seconds limit = std::chrono::seconds(180)) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < end) {
      if (ready()) return true;
      if (ended()) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  // Raw wait status; -1 if it had to be killed after `limit`.
  int wait(std::chrono::seconds limit = std::chrono::seconds(180)) {
    if (!wait_until([] { return false; }, limit) && !status_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
      status_ = -1;
    }
    return *status_;
  }

  std::string err() const { return read(err_path_); }
  std::string out() const { return read(out_path_); }

  // Tandem has taken the stop signals over: every one of its threads blocks SIGINT (a signal
  // is now the watcher's, instead of a default action in a thread a library started early),
  // but the watcher itself while it waits in sigwait: the kernel lifts the waited signals from
  // a thread's mask for the wait (its SigBlk shows SIGINT open, its wchan do_sigtimedwait).
  // Counting the watcher as open made the probe true only in the gaps of its wait: 9 s into a
  // simulation here, never under TSan. A thread that ends while it is looked at (no status left,
  // or a zombie's) is no thread either.
  bool took_signals_over() const {
    const std::string tasks = "/proc/" + std::to_string(pid_) + "/task";
    std::error_code ec;
    bool any = false;
    for (const auto& task : std::filesystem::directory_iterator(tasks, ec)) {
      std::istringstream status(read(task.path() / "status"));
      bool blocked = false, live = false;
      for (std::string line; std::getline(status, line);) {
        if (line.rfind("State:", 0) == 0) {
          const std::size_t at = line.find_first_not_of(" \t", 6);
          live = at != std::string::npos && line[at] != 'Z' && line[at] != 'X';
        }
        if (line.rfind("SigBlk:", 0) == 0) blocked = (std::stoull(line.substr(7), nullptr, 16) >> (SIGINT - 1)) & 1;
      }
      if (!live) continue;
      if (!blocked && read(task.path() / "wchan").find("sigtimedwait") == std::string::npos) return false;
      any = true;
    }
    return any;
  }

  static bool alive(pid_t pid) { return std::filesystem::exists("/proc/" + std::to_string(pid)); }

 private:
  bool ended() {
    if (status_) return true;
    int raw = 0;
    if (::waitpid(pid_, &raw, WNOHANG) == pid_) status_ = raw;
    return status_.has_value();
  }
  static std::vector<pid_t> children_of(pid_t parent) {
    std::vector<pid_t> out;
    DIR* proc = ::opendir("/proc");
    while (const dirent* e = proc ? ::readdir(proc) : nullptr) {
      const pid_t pid = static_cast<pid_t>(std::atoi(e->d_name));
      if (pid > 0 && parent_of(pid) == parent) out.push_back(pid);
    }
    if (proc) ::closedir(proc);
    return out;
  }
  static pid_t parent_of(pid_t pid) {
    const std::string stat = read("/proc/" + std::to_string(pid) + "/stat");
    const std::size_t close = stat.rfind(')');  // the command name may hold spaces and parentheses
    if (close == std::string::npos) return -1;
    std::istringstream rest(stat.substr(close + 1));
    std::string state;
    pid_t parent = -1;
    rest >> state >> parent;
    return parent;
  }
  static std::string read(const std::filesystem::path& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

  std::filesystem::path out_path_, err_path_;
  pid_t pid_ = -1;
  std::optional<int> status_;
};

}  // namespace tandem::cli_test
