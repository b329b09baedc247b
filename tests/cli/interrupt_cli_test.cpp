// Ctrl-C and kill on the real binary (common/interrupts.hpp): the command stops with 128 + the
// signal and one line, its worker processes are reaped, no temporary file is left, and outputs
// are all old or all new. Signals are sent when a condition is seen (workers started, a
// checkpoint written), never after a tuned delay, so a slow machine only makes them slower.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>

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
