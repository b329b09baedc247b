// `tandem run --elastic`: ranks as processes under a supervisor. A rank killed with SIGKILL, or
// one that stops (SIGSTOP) and so stops beating, is found, and the training resumes from the last
// checkpoint: on a spare with the same plan, or on the survivors with a re-planned strategy; the
// loss curve goes on as an uninterrupted run's (within the equivalence tolerance), and the run
// never hangs.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <signal.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/cli/cli_test_support.hpp"

namespace tandem {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

bool have_mpirun() { return std::system("command -v mpirun >/dev/null 2>&1") == 0; }

// Starts `tandem run gpt-tiny-localhost --elastic ...` in the background, writing DIR/out.json.
void start_elastic(const fs::path& dir, int iterations, const std::string& extra) {
  const std::string command = cli_test::tandem_binary() + " run gpt-tiny-localhost --elastic --checkpoint " +
                              (dir / "ck.bin").string() + " --checkpoint-every 5 --iterations " +
                              std::to_string(iterations) + " --json " + (dir / "out.json").string() + " " + extra +
                              " >" + (dir / "log.txt").string() + " 2>&1 &";
  ASSERT_EQ(std::system(command.c_str()), 0);
}

// Waits until job `job`'s rank `rank` has finished `iteration` iterations; its process id.
pid_t wait_for_beat(const fs::path& dir, int job, int rank, int iteration) {
  const fs::path beat = dir / "ck.bin.elastic" / ("heartbeats-" + std::to_string(job)) / ("rank" + std::to_string(rank));
  const auto deadline = Clock::now() + std::chrono::seconds(120);
  while (Clock::now() < deadline) {
    std::ifstream in(beat);
    pid_t pid = -1;
    int next = -1;
    if (in >> pid >> next && next >= iteration) return pid;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return -1;
}

// The supervisor's account, once it has written it (at most 3 minutes: never a hang).
nlohmann::json wait_for_account(const fs::path& dir) {
  const auto deadline = Clock::now() + std::chrono::seconds(180);
  while (Clock::now() < deadline) {
    if (fs::exists(dir / "out.json")) return nlohmann::json::parse(cli_test::read_file(dir / "out.json"));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ADD_FAILURE() << "no account after 3 minutes\n" << cli_test::read_file(dir / "log.txt");
  return {};
}

double unix_now_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Losses of an uninterrupted run (ranks as threads) of the same scenario.
std::vector<double> uninterrupted(int iterations) {
  const cli_test::CliRun run = cli_test::run_tandem("run gpt-tiny-localhost --iterations " + std::to_string(iterations) + " --json -");
  EXPECT_EQ(run.status, 0) << run.err;
  std::vector<double> out;
  const nlohmann::json j = nlohmann::json::parse(run.out);  // (a temporary's member would dangle in the loop)
  for (const auto& it : j["iterations"]) out.push_back(it["loss"].get<double>());
  return out;
}

void expect_curve_goes_on(const nlohmann::json& account, const std::vector<double>& reference) {
  ASSERT_EQ(account["losses"].size(), reference.size());
  for (const auto& l : account["losses"]) {
    const int i = l["iteration"].get<int>();
    // The printed loss has 4 decimals; the survivors sum in another order (fp32 rounding).
    EXPECT_NEAR(l["loss"].get<double>(), reference[static_cast<std::size_t>(i)], 2e-4) << "iteration " << i;
  }
}

// Starts the elastic run in `dir`, sends `signal` to rank `rank` of its first job once that rank has
// finished 20 iterations, and returns the supervisor's account (null when the rank never got
// there); `victim` and `sent_at` say to whom and when.
nlohmann::json signal_rank_and_wait(const fs::path& dir, int iterations, const std::string& extra, int rank, int signal,
                                    pid_t* victim = nullptr, double* sent_at = nullptr) {
  start_elastic(dir, iterations, extra);
  const pid_t pid = wait_for_beat(dir, 0, rank, 20);
  EXPECT_GT(pid, 0) << cli_test::read_file(dir / "log.txt");
  if (pid <= 0) return nullptr;
  if (victim) *victim = pid;
  if (sent_at) *sent_at = unix_now_s();
  EXPECT_EQ(::kill(pid, signal), 0);
  return wait_for_account(dir);
}

TEST(RunElasticCli, ARankKilledMidRunIsReplacedByTheSurvivorsWithAReplannedStrategy) {
  if (!have_mpirun()) GTEST_SKIP() << "no mpirun";
  const fs::path dir = cli_test::fresh_dir("tandem-elastic", "kill");
  const int iterations = 400;
  double killed_at = 0;
  const nlohmann::json account = signal_rank_and_wait(dir, iterations, "", 1, SIGKILL, nullptr, &killed_at);
  ASSERT_EQ(account["failures"].size(), 1u) << account.dump(2);
  const nlohmann::json& f = account["failures"][0];
  EXPECT_EQ(f["rank"], 1);
  EXPECT_EQ(f["cause"], "killed by signal 9");
  EXPECT_LT(f["detected_at_unix_s"].get<double>() - killed_at, 5.0);  // the stated bound: polled every 10 ms
  EXPECT_EQ(f["resumed_from"].get<int>() % 5, 0);                     // a checkpoint's iteration
  EXPECT_GE(f["restart_s"].get<double>(), 0.0);
  EXPECT_GE(f["stop_s"].get<double>(), 0.0);
  EXPECT_EQ(account["jobs"].size(), 2u);
  EXPECT_EQ(account["final_strategy"], "data_parallel(dp=1)");
  // The simulator's prediction of the recovery: the first job's measured start, then the lost
  // iterations at the re-planned job's simulated iteration time (sim/reliability/restart_cost).
  const double start_s = account["jobs"][0]["start_s"].get<double>();
  const double step_s = account["jobs"][1]["simulated_iteration_s"].get<double>();
  EXPECT_GT(start_s, 0.0);
  EXPECT_GT(step_s, 0.0);
  EXPECT_GE(f["predicted_restart_s"].get<double>(), start_s);
  EXPECT_NEAR(f["predicted_recovered_s"].get<double>(),
              f["predicted_restart_s"].get<double>() + f["lost_iterations"].get<int>() * step_s, 1e-9);
  expect_curve_goes_on(account, uninterrupted(iterations));
}

TEST(RunElasticCli, ARankThatStopsBeatingIsStoppedAndReplacedByASpare) {
  if (!have_mpirun()) GTEST_SKIP() << "no mpirun";
  const fs::path dir = cli_test::fresh_dir("tandem-elastic", "hang");
  const int iterations = 200;
  pid_t victim = -1;
  const nlohmann::json account = signal_rank_and_wait(dir, iterations, "--spares 1 --heartbeat-timeout 2", 1, SIGSTOP, &victim);
  if (victim > 0) ::kill(victim, SIGKILL);  // (gone already: its job was stopped)
  ASSERT_EQ(account["failures"].size(), 1u) << account.dump(2);
  const nlohmann::json& f = account["failures"][0];
  EXPECT_EQ(f["rank"], 1);
  EXPECT_EQ(f["cause"], "no heartbeat for 2 s");
  EXPECT_EQ(f["next_plan"], "the same plan on a spare device");
  EXPECT_EQ(account["spares_left"], 0);
  EXPECT_EQ(account["final_strategy"], "data_parallel(dp=2)");
  expect_curve_goes_on(account, uninterrupted(iterations));
}

TEST(RunElasticCli, TheSearchReplansForTheSurvivorsWhenAsked) {
  if (!have_mpirun()) GTEST_SKIP() << "no mpirun";
  const fs::path dir = cli_test::fresh_dir("tandem-elastic", "search");
  const nlohmann::json account = signal_rank_and_wait(dir, 300, "--replan search", 0, SIGKILL);
  ASSERT_EQ(account["failures"].size(), 1u) << account.dump(2);
  EXPECT_EQ(account["failures"][0]["rank"], 0);
  // One device left: the search's plan for it (whatever its knobs) holds one rank.
  EXPECT_EQ(account["jobs"][1]["ranks"], 1);
  EXPECT_EQ(account["losses"].size(), 300u);
  const std::string plan = cli_test::read_file(account["jobs"][1]["plan"].get<std::string>());
  EXPECT_NE(plan.find("re-planned by tandem run --elastic"), std::string::npos) << plan;
}

TEST(RunElasticCli, WhatAnElasticRunCannotTakeIsRefusedAtItsOption) {
  const cli_test::CliRun no_checkpoint = cli_test::run_tandem("run gpt-tiny-localhost --elastic --iterations 2");
  EXPECT_EQ(no_checkpoint.status, 2) << no_checkpoint.err;
  EXPECT_NE(no_checkpoint.err.find("--elastic"), std::string::npos) << no_checkpoint.err;
  EXPECT_NE(no_checkpoint.err.find("--checkpoint"), std::string::npos) << no_checkpoint.err;
  const fs::path dir = cli_test::fresh_dir("tandem-elastic", "refused");
  const cli_test::CliRun traced = cli_test::run_tandem("run gpt-tiny-localhost --elastic --iterations 2 --checkpoint " +
                                                       (dir / "ck.bin").string() + " --trace " + (dir / "t.json").string());
  EXPECT_EQ(traced.status, 2) << traced.err;
  EXPECT_NE(traced.err.find("--trace"), std::string::npos) << traced.err;
  const cli_test::CliRun spares = cli_test::run_tandem("run gpt-tiny-localhost --iterations 1 --spares 2");
  EXPECT_EQ(spares.status, 2) << spares.err;
  EXPECT_NE(spares.err.find("--spares"), std::string::npos) << spares.err;
  const cli_test::CliRun repair = cli_test::run_tandem("run gpt-tiny-localhost --iterations 1 --repair-after 5");
  EXPECT_EQ(repair.status, 2) << repair.err;
  EXPECT_NE(repair.err.find("--repair-after"), std::string::npos) << repair.err;
}

// Re-balancing inside an elastic run (issue 15): every job re-splits its batch shares
// --rebalance-after iterations after its start, from its own ranks' measured speeds (rank 1 slowed
// 3x): the first job, killed after it, and the job on the spare that replaces it; the loss curve
// goes on as an uninterrupted run's (the split changes the order of additions only). Which split
// the speeds give is measured in wall time, so it is reported, not asserted (a loaded machine moves it).
TEST(RunElasticCli, EveryJobRebalancesItsBatchSharesAfterItsStart) {
  if (!have_mpirun()) GTEST_SKIP() << "no mpirun";
  const fs::path dir = cli_test::fresh_dir("tandem-elastic", "rebalance");
  const int iterations = 120;
  const nlohmann::json account =
      signal_rank_and_wait(dir, iterations, "--spares 1 --rebalance-after 10 --slow-rank 1:3", 1, SIGKILL);
  ASSERT_EQ(account["failures"].size(), 1u) << account.dump(2);
  ASSERT_EQ(account["jobs"].size(), 2u) << account.dump(2);
  const std::string log = cli_test::read_file(dir / "log.txt");
  std::size_t rebalances = 0;
  for (std::size_t at = log.find("rebalance   after 10 iteration(s)"); at != std::string::npos;
       at = log.find("rebalance   after 10 iteration(s)", at + 1))
    ++rebalances;
  EXPECT_EQ(rebalances, 2u) << log;
  for (const auto& job : account["jobs"]) EXPECT_NE(job.value("rebalance", ""), "") << job;  // "2/2 -> 3/1"
  expect_curve_goes_on(account, uninterrupted(iterations));
}

// Growing back (issue 15): shrunk to one rank by a kill, the job is stopped at its first checkpoint
// --repair-after iterations on and resumed on the scenario's two ranks; the loss curve goes on.
TEST(RunElasticCli, AShrunkJobGrowsBackToItsPlanWhenTheLostDevicesReturn) {
  if (!have_mpirun()) GTEST_SKIP() << "no mpirun";
  const fs::path dir = cli_test::fresh_dir("tandem-elastic", "regrow");
  const int iterations = 150;
  const nlohmann::json account = signal_rank_and_wait(dir, iterations, "--repair-after 10", 1, SIGKILL);
  ASSERT_EQ(account["failures"].size(), 1u) << account.dump(2);
  ASSERT_EQ(account["regrowths"].size(), 1u) << account.dump(2);
  ASSERT_EQ(account["jobs"].size(), 3u) << account.dump(2);
  EXPECT_EQ(account["jobs"][1]["strategy"], "data_parallel(dp=1)");
  EXPECT_EQ(account["jobs"][2]["strategy"], "data_parallel(dp=2)");
  const int shrunk_at = account["failures"][0]["resumed_from"].get<int>();
  const nlohmann::json& g = account["regrowths"][0];
  // The first checkpoint (every 5) 10 iterations on, or a later one if the rank ran on before its
  // stop landed (a loaded machine).
  EXPECT_GE(g["resumed_from"].get<int>(), shrunk_at + 10);
  EXPECT_EQ(g["resumed_from"].get<int>() % 5, 0);
  EXPECT_EQ(account["jobs"][2]["first_iteration"], g["resumed_from"]);
  EXPECT_GT(g["predicted_restart_s"].get<double>(), 0.0);
  EXPECT_EQ(account["final_strategy"], "data_parallel(dp=2)");
  expect_curve_goes_on(account, uninterrupted(iterations));
}

}  // namespace
}  // namespace tandem
