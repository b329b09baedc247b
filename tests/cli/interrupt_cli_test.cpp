// Ctrl-C and kill on the real binary (common/interrupts.hpp): the command stops with 128 + the
// signal and one line, its worker processes are reaped, no temporary file is left, and outputs
// are all old or all new. Signals are sent when a condition is seen (workers started, a
// checkpoint written), never after a tuned delay, so a slow machine only makes them slower.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "exec/cpu/checkpoint.hpp"
#include "tests/cli/cli_test_support.hpp"
#include "tests/cli/spawned_tandem.hpp"

namespace tandem {
namespace {

namespace fs = std::filesystem;
using cli_test::SpawnedTandem;

using cli_test::read_file;

fs::path fresh_dir(const std::string& name) { return cli_test::fresh_dir("tandem-interrupt", name); }

void write_text(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

std::vector<std::string> temporary_files(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.path().filename().string().find(".tmp.") != std::string::npos) out.push_back(e.path().string());
  return out;
}

bool exited_with(int raw, int code) { return raw != -1 && WIFEXITED(raw) && WEXITSTATUS(raw) == code; }

// The outputs' folder holds nothing but what the test put there and the logs.
void expect_no_temporary_files(const fs::path& dir) {
  const auto left = temporary_files(dir);
  EXPECT_TRUE(left.empty()) << left.size() << " temporary file(s) left, e.g. " << (left.empty() ? "" : left[0]);
}

TEST(InterruptCli, SigintStopsASearchAndReapsItsWorkers) {
  const fs::path dir = fresh_dir("search");
  write_text(dir / "search.json", "old\n");
  SpawnedTandem tandem({"search", "search-gpt3-13b-mixed", "--workers", "2", "--json", (dir / "search.json").string(),
                        "--winner", (dir / "winner.yaml").string()},
                       dir);
  std::vector<pid_t> workers;
  ASSERT_TRUE(tandem.wait_until([&] {
    workers = tandem.children();
    return !workers.empty();
  })) << "no worker process seen; stderr: " << tandem.err();
  tandem.signal(SIGINT);
  const int raw = tandem.wait();
  EXPECT_TRUE(exited_with(raw, 130)) << "raw status " << raw << "; stderr: " << tandem.err();
  EXPECT_NE(tandem.err().find("tandem: interrupted (SIGINT)"), std::string::npos) << tandem.err();
  EXPECT_EQ(tandem.err().find("CTRL-C"), std::string::npos) << "SimGrid's handler ran: " << tandem.err();
  for (pid_t w : workers) EXPECT_FALSE(SpawnedTandem::alive(w)) << "worker " << w << " outlived the search";
  EXPECT_EQ(read_file(dir / "search.json"), "old\n");
  EXPECT_FALSE(fs::exists(dir / "winner.yaml"));
  expect_no_temporary_files(dir);
}

// Ctrl-C in a terminal signals the whole foreground process group: the workers get SIGINT at
// the same moment as the search. Every process of the search is gone afterwards (not only
// reaped children: any descendant), the search exits with 130 and one line, and it does so
// promptly. The promise is a second; the bound below is ten times that, so it tells a stop
// from a hang or from a wait for the 5 s grace a child command gets, not a fast machine from a
// slow one.
TEST(InterruptCli, CtrlCToASearchsProcessGroupLeavesNoProcessBehindAndExitsPromptly) {
  const fs::path dir = fresh_dir("search-group");
  SpawnedTandem tandem({"search", "search-gpt3-13b-mixed", "--workers", "2", "--json", (dir / "search.json").string()},
                       dir, /*own_group=*/true);
  std::vector<pid_t> processes;
  // Two workers running: the search is past its start-up (the watcher took the signals over).
  ASSERT_TRUE(tandem.wait_until([&] {
    processes = tandem.descendants();
    return processes.size() >= 2;
  })) << "two workers were never seen at once; stderr: " << tandem.err();
  const auto sent = std::chrono::steady_clock::now();
  tandem.signal_group(SIGINT);
  const int raw = tandem.wait();
  const auto took = std::chrono::steady_clock::now() - sent;
  EXPECT_TRUE(exited_with(raw, 130)) << "raw status " << raw << "; stderr: " << tandem.err();
  EXPECT_LT(took, std::chrono::seconds(10)) << "stopping took "
                                            << std::chrono::duration<double>(took).count() << " s";
  const std::string err = tandem.err();
  EXPECT_EQ(err.find("tandem: interrupted (SIGINT)"), err.rfind("tandem: interrupted")) << "one line: " << err;
  EXPECT_NE(err.find("tandem: interrupted (SIGINT)"), std::string::npos) << err;
  for (pid_t p : processes) EXPECT_FALSE(SpawnedTandem::alive(p)) << "process " << p << " outlived the search";
  EXPECT_FALSE(fs::exists(dir / "search.json"));
  expect_no_temporary_files(dir);
}

TEST(InterruptCli, SigtermStopsARunAndLeavesAWholeCheckpoint) {
  const fs::path dir = fresh_dir("run");
  const fs::path checkpoint = dir / "ck.bin";
  SpawnedTandem tandem({"run", "gpt-tiny-localhost", "--iterations", "100000", "--checkpoint", checkpoint.string(),
                        "--checkpoint-every", "1", "--json", (dir / "run.json").string()},
                       dir);
  ASSERT_TRUE(tandem.wait_until([&] { return fs::exists(checkpoint); })) << "no checkpoint; stderr: " << tandem.err();
  tandem.signal(SIGTERM);
  const int raw = tandem.wait();
  EXPECT_TRUE(exited_with(raw, 143)) << "raw status " << raw << "; stderr: " << tandem.err();
  EXPECT_NE(tandem.err().find("tandem: interrupted (SIGTERM)"), std::string::npos) << tandem.err();
  expect_no_temporary_files(dir);
  EXPECT_FALSE(fs::exists(dir / "run.json")) << "an interrupted run wrote its summary";
  const exec::cpu::Checkpoint ck = exec::cpu::load_checkpoint(checkpoint.string());  // whole, or this throws
  EXPECT_GE(ck.next_iteration, 1);
}

// Whenever the signal lands (loading, simulating, writing), the outputs are all old or all new.
TEST(InterruptCli, SigintDuringASimulationLeavesOutputsAllOldOrAllNew) {
  const fs::path dir = fresh_dir("simulate");
  write_text(dir / "p.json", "old\n");
  SpawnedTandem tandem({"simulate", "mixed-3d-proportional", "--json", (dir / "p.json").string(), "--trace",
                        (dir / "t.json").string(), "--chrome-trace", (dir / "c.json").string()},
                       dir);
  ASSERT_TRUE(tandem.wait_until([&] { return tandem.took_signals_over(); })) << tandem.err();
  tandem.signal(SIGINT);
  const int raw = tandem.wait();
  ASSERT_TRUE(exited_with(raw, 130) || exited_with(raw, 0)) << "raw status " << raw << "; stderr: " << tandem.err();
  if (exited_with(raw, 130)) {
    EXPECT_EQ(read_file(dir / "p.json"), "old\n");
    EXPECT_FALSE(fs::exists(dir / "t.json"));
    EXPECT_FALSE(fs::exists(dir / "c.json"));
  } else {
    EXPECT_NE(read_file(dir / "p.json"), "old\n");
    EXPECT_TRUE(fs::exists(dir / "t.json") && fs::exists(dir / "c.json"));
  }
  expect_no_temporary_files(dir);
}

}  // namespace
}  // namespace tandem
