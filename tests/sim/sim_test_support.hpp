// Running a SimGrid simulation inside a test. SimGrid allows one Engine per process, and the test
// binary runs all tests in one process when started by hand (ctest starts one per test). So a
// test that simulates runs the simulation in a forked child:
//
//   auto result = tandem::sim_test::run_in_child([] {
//     simgrid::s4u::Engine engine("test");          // the child's own engine
//     tandem::sim_test::quiet_simgrid();
//     ... build, run ...
//     return std::string("0.125");                  // anything, serialized (JSON, numbers...)
//   });
//   ASSERT_TRUE(result.ok) << result.describe();
//   EXPECT_EQ(result.output, "0.125");
//
// f returns std::string (or void, for an empty output). Assert in the parent on the returned text:
// gtest assertions inside the child are not seen by the parent. To fail from inside the child,
// throw (the exception's what() comes back in `error`); a crash, a signal or the timeout comes
// back as !ok with a description.
#pragma once

#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xbt/log.h>

#include "common/process_pool.hpp"
#include "scenarios/scenario.hpp"
#include "sim/simulation.hpp"
#include "tests/platforms/platform_test_support.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

namespace tandem::sim_test {

struct SimResult {
  bool ok = false;         // the child returned normally from f
  int exit_code = -1;      // the child's exit status (-1 if killed by a signal)
  int signal = 0;          // the signal that ended the child, 0 if none
  std::string output;      // what f returned
  std::string error;       // the exception message, or what went wrong
  std::string describe() const {
    if (ok) return "ok";
    std::string text = "child failed";
    if (signal != 0) text += " (signal " + std::to_string(signal) + ": " + strsignal(signal) + ")";
    if (exit_code >= 0) text += " (exit " + std::to_string(exit_code) + ")";
    if (!error.empty()) text += ": " + error;
    return text;
  }
};

// Quiet SimGrid's INFO chatter (configuration changes, energy summaries) in the child.
inline void quiet_simgrid() { xbt_log_control_set("root.thres:warning"); }

// Simulates scenario `s` (in the child) for `iterations` after `warmup`, recording the trace, with
// the scenario's other simulation options.
inline sim::SimulationResult simulate_traced(const Scenario& s, int warmup, int iterations) {
  auto strategy = make_strategy(s);
  sim::SimulationOptions options = s.simulation;
  options.warmup_iterations = warmup;
  options.iterations = iterations;
  options.record_trace = true;
  return sim::simulate(*strategy, s.cluster, options);
}

// The same for a scenario given as YAML text (written to a temporary file first).
inline sim::SimulationResult simulate_text_traced(const std::string& yaml, int warmup, int iterations) {
  test::TempDir dir;
  return simulate_traced(load_scenario(dir.write("scenario.yaml", yaml)), warmup, iterations);
}

// Exit codes of the child: 0 ok, 3 f threw, 4 f threw a non-exception.
template <class F>
SimResult run_in_child(F&& f, unsigned timeout_s = 600) {
  SimResult result;
  int fds[2];
  if (::pipe(fds) != 0) {
    result.error = std::string("pipe failed: ") + std::strerror(errno);
    return result;
  }
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    result.error = std::string("fork failed: ") + std::strerror(errno);
    return result;
  }
  if (pid == 0) {  // the child: run f, send back '0'+output or '1'+error, leave without atexit handlers
    ::close(fds[0]);
    if (timeout_s > 0) ::alarm(timeout_s);
    finish_child(fds[1], [&]() -> std::string {
      if constexpr (std::is_void_v<std::invoke_result_t<F>>) {
        std::forward<F>(f)();
        return "";
      } else {
        return std::string(std::forward<F>(f)());
      }
    });
  }

  // The parent: read everything (so a large output cannot block the child), then reap it.
  ::close(fds[1]);
  std::string data;
  char buffer[4096];
  while (true) {
    const ssize_t n = ::read(fds[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    data.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
  }
  if (!data.empty() && data[0] == '0') {
    result.output = data.substr(1);
    result.ok = result.exit_code == 0;
  } else if (!data.empty() && data[0] == '1') {
    result.error = data.substr(1);
  } else if (result.signal == SIGALRM) {
    result.error = "timed out after " + std::to_string(timeout_s) + " s";
  } else {
    result.error = "no result from the child (it crashed or exited early: SimGrid aborts the process on "
                   "errors such as a deadlock or a missing route; see its output above)";
  }
  return result;
}

// Simulates a scenario given as YAML text in a child (`warmup` warm-up iterations, one by default,
// and one measured iteration, traced), lets `figures(result, out)` write what the test reads off it, and returns that text as
// a stream to read back. Throws with the child's failure.
template <class F>
std::istringstream traced_figures(const std::string& yaml, F&& figures, int warmup = 1) {
  SimResult child = run_in_child([&]() -> std::string {
    quiet_simgrid();
    const sim::SimulationResult r = simulate_text_traced(yaml, warmup, /*iterations=*/1);
    std::ostringstream out;
    out.precision(17);
    figures(r, out);
    return out.str();
  });
  if (!child.ok) throw std::runtime_error(child.describe());
  return std::istringstream(child.output);
}

}  // namespace tandem::sim_test
