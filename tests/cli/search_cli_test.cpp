// `tandem search` end to end: the real binary on the small bundled search, its report, its JSON,
// and a winner scenario that `tandem simulate` accepts unchanged and predicts the same time for.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <cstdio>
#include <cstdlib>

#include "tests/cli/cli_test_support.hpp"

namespace tandem {
namespace {

namespace fs = std::filesystem;
using cli_test::CliRun;
using cli_test::run_tandem;

TEST(SearchCli, ReportsTheTopStrategiesAndWritesAWinnerThatSimulates) {
  const fs::path dir = fs::temp_directory_path() / ("tandem-search-cli-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string json_path = (dir / "search.json").string();
  const std::string winner = (dir / "winner.yaml").string();
  const CliRun run = run_tandem("search search-tiny-h100 --workers 2 --top 3 --json " + json_path + " --winner " + winner);
  ASSERT_EQ(run.status, 0) << run.err;
  for (const char* needle : {"top 3 by time", "Pareto front", "simulated", "ruled out by the lower bound", "coverage",
                             "tok/s", "MFU", "winner", "profile     H100-SXM: datasheet", "collectives H100-SXM: NCCL model"})
    EXPECT_NE(run.out.find(needle), std::string::npos) << needle << "\n" << run.out;
  EXPECT_NE(run.err.find("simulated"), std::string::npos) << "progress on stderr";

  std::ifstream in(json_path);
  const nlohmann::json report = nlohmann::json::parse(in);
  ASSERT_EQ(report["ranked"].size(), 3u);
  const double best_s = report["ranked"][0]["prediction"]["iteration_time_s"].get<double>();
  EXPECT_LE(best_s, report["ranked"][1]["prediction"]["iteration_time_s"].get<double>());

  const CliRun simulate = run_tandem("simulate " + winner + " --json -");
  ASSERT_EQ(simulate.status, 0) << simulate.err;
  const nlohmann::json prediction = nlohmann::json::parse(simulate.out);
  EXPECT_DOUBLE_EQ(prediction["iteration_time_s"].get<double>(), best_s);
}

TEST(SearchCli, JsonToStdout) {
  const CliRun run = run_tandem("search search-tiny-h100 --workers 1 --top 2 --json -");
  ASSERT_EQ(run.status, 0) << run.err;
  const nlohmann::json report = nlohmann::json::parse(run.out);
  EXPECT_EQ(report["objective"], "time");
  EXPECT_EQ(report["ranked"].size(), 2u);
  EXPECT_GT(report["simulated"].get<int>(), 0);
  // What the ranking rests on travels with it.
  ASSERT_EQ(report["collectives_basis"].size(), 1u);
  EXPECT_NE(report["collectives_basis"][0].get<std::string>().find("NCCL model"), std::string::npos);
}

// The same search spread over MPI ranks (rank 0 searches, ranks 1 and 2 simulate) ranks the same
// candidates with the same predictions as one local worker.
TEST(SearchCli, MpiRanksGiveTheSameAnswerAsOneWorker) {
  if (run_tandem("search --help").out.find("--mpi") == std::string::npos) GTEST_SKIP() << "built without MPI";
  if (std::system("command -v mpirun >/dev/null 2>&1") != 0) GTEST_SKIP() << "no mpirun";
  const std::string mpirun = "mpirun --oversubscribe --allow-run-as-root -np 3 " + cli_test::tandem_binary() +
                             " search search-tiny-h100 --mpi --top 4 --json - 2>/dev/null";
  FILE* pipe = popen(mpirun.c_str(), "r");
  std::string out;
  char buffer[4096];
  while (std::size_t n = fread(buffer, 1, sizeof buffer, pipe)) out.append(buffer, n);
  ASSERT_EQ(pclose(pipe), 0) << out;
  const nlohmann::json mpi = nlohmann::json::parse(out);
  const CliRun local = run_tandem("search search-tiny-h100 --workers 1 --top 4 --json -");
  ASSERT_EQ(local.status, 0) << local.err;
  const nlohmann::json one = nlohmann::json::parse(local.out);
  EXPECT_EQ(mpi["workers"], 2);
  ASSERT_EQ(mpi["ranked"].size(), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(mpi["ranked"][i]["candidate"], one["ranked"][i]["candidate"]);
    EXPECT_EQ(mpi["ranked"][i]["objective"], one["ranked"][i]["objective"]);
  }
}

TEST(SearchCli, BadOptionsAreBadInput) {
  EXPECT_EQ(run_tandem("search search-tiny-h100 --objective speed").status, 2);
  EXPECT_EQ(run_tandem("search no-such-scenario").status, 2);
  const CliRun cost = run_tandem("search gpt-tiny-localhost --objective cost --top 1 --workers 1 --json -");
  EXPECT_EQ(cost.status, 0) << cost.err << "cpu-generic has a price";
}

}  // namespace
}  // namespace tandem
