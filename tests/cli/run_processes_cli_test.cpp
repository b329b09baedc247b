// `mpirun -np N tandem run --backend cpu`: the CPU backend's ranks as processes, one rank each,
// their collectives through MPI (distributed/mpi_rank_comm.hpp). They train as ranks as threads
// do (the same kernels and strategies; sums in MPI's order, so within fp32 rounding), and their
// checkpoint is the same file, which resumes under any strategy and either way of running.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "tests/cli/cli_test_support.hpp"

namespace tandem {
namespace {

bool have_mpirun() { return std::system("command -v mpirun >/dev/null 2>&1") == 0; }

cli_test::CliRun run_processes(int np, const std::string& args) {
  return cli_test::run_tandem_with_prefix("mpirun --oversubscribe --allow-run-as-root -np " + std::to_string(np) + " ",
                                          args);
}

std::vector<double> losses(const cli_test::CliRun& run) {
  std::vector<double> out;
  const nlohmann::json j = nlohmann::json::parse(run.out);
  for (const auto& it : j["iterations"]) out.push_back(it["loss"].get<double>());
  return out;
}

void expect_close(const std::vector<double>& a, const std::vector<double>& b, double rel, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], rel * std::abs(b[i])) << what << " iteration " << i;
}

// gpt-tiny on a 4-core "localhost" (the strategies below need 4 ranks), with `strategy` lines.
std::string scenario_in(const std::filesystem::path& dir, const std::string& name, const std::string& strategy,
                        const std::string& model = "gpt-tiny") {
  std::ofstream(dir / "localhost-4.yaml")
      << "name: localhost-4\nnode_groups:\n  - name: cpu\n    device: cpu-generic\n    nodes: 1\n    devices_per_node: 4\n"
      << "    intra_node: {fabric: shared_memory, bandwidth_gb_per_s: 3.2, latency_us: 1.0, bus: {bandwidth_gb_per_s: 12.8}}\n";
  const auto path = dir / (name + ".yaml");
  std::ofstream(path) << "name: " << name << "\nmodel: " << model << "\ncluster: localhost-4.yaml\n"
                      << "training: {global_batch_size: 8, micro_batch_size: 2, seq_length: 32, precision: fp32, lr: 0.001}\n"
                      << "strategy:\n" << strategy;
  return path.string();
}

TEST(RunProcessesCli, RanksAsProcessesTrainAsRanksAsThreads) {
  if (!have_mpirun()) GTEST_SKIP() << "no mpirun";
  const auto dir = cli_test::fresh_dir("tandem-processes", "equal");
  struct Case {
    std::string name, strategy;
    int ranks;
    std::string model = "gpt-tiny";
  };
  // Experts: all-to-all dispatch and combine; servers: posted sends and receives.
  const std::string moe =
      "{name: gpt-tiny-moe, num_layers: 2, hidden_size: 64, num_attention_heads: 4, vocab_size: 256, seq_length: 32, "
      "bias: false, num_moe_experts: 4, moe_router_topk: 2}";
  const std::vector<Case> cases = {
      {"zero3", "  type: hybrid\n  data_parallel_size: 2\n  zero_stage: 3\n", 2},
      {"tp2pp2", "  type: hybrid\n  tensor_model_parallel_size: 2\n  pipeline_model_parallel_size: 2\n", 4},
      {"tp2sp-dp2", "  type: hybrid\n  tensor_model_parallel_size: 2\n  data_parallel_size: 2\n  sequence_parallel: true\n", 4},
      {"ep2-dp4", "  type: hybrid\n  data_parallel_size: 4\n  expert_model_parallel_size: 2\n", 4, moe},
      {"ps2", "  type: data_parallel\n  data_parallel_size: 2\n  parameter_servers: 2\n  parameter_server_optimizer: true\n", 4},
  };
  for (const Case& c : cases) {
    const std::string scenario = scenario_in(dir, c.name, c.strategy, c.model);
    const cli_test::CliRun threads = cli_test::run_tandem("run " + scenario + " --iterations 3 --json -");
    const cli_test::CliRun processes = run_processes(c.ranks, "run " + scenario + " --iterations 3 --json -");
    ASSERT_EQ(threads.status, 0) << threads.err;
    ASSERT_EQ(processes.status, 0) << processes.err;
    EXPECT_EQ(nlohmann::json::parse(processes.out)["ranks"].size(), static_cast<std::size_t>(c.ranks)) << c.name;
    expect_close(losses(processes), losses(threads), 1e-5, c.name);
  }
}

TEST(RunProcessesCli, TheirCheckpointResumesAsThreadsUnderAnotherStrategy) {
  if (!have_mpirun()) GTEST_SKIP() << "no mpirun";
  const auto dir = cli_test::fresh_dir("tandem-processes", "resume");
  const std::string four = scenario_in(dir, "tp2pp2", "  type: hybrid\n  tensor_model_parallel_size: 2\n  pipeline_model_parallel_size: 2\n");
  const std::string two = scenario_in(dir, "dp2", "  type: data_parallel\n  data_parallel_size: 2\n");
  // The same four iterations with ranks as processes and as threads, each checkpointed, then
  // resumed by two threads as data parallelism: the two continuations agree.
  const std::string by_processes = (dir / "processes.bin").string(), by_threads = (dir / "threads.bin").string();
  const cli_test::CliRun a = run_processes(4, "run " + four + " --iterations 4 --checkpoint " + by_processes + " --json -");
  const cli_test::CliRun b = cli_test::run_tandem("run " + four + " --iterations 4 --checkpoint " + by_threads + " --json -");
  ASSERT_EQ(a.status, 0) << a.err;
  ASSERT_EQ(b.status, 0) << b.err;
  const cli_test::CliRun after_a = cli_test::run_tandem("run " + two + " --iterations 2 --resume " + by_processes + " --json -");
  const cli_test::CliRun after_b = cli_test::run_tandem("run " + two + " --iterations 2 --resume " + by_threads + " --json -");
  ASSERT_EQ(after_a.status, 0) << after_a.err;
  ASSERT_EQ(after_b.status, 0) << after_b.err;
  EXPECT_EQ(nlohmann::json::parse(after_a.out)["first_iteration"], 4);
  expect_close(losses(after_a), losses(after_b), 1e-5, "resumed");
}

// The first process writes the trace with every rank's records, on its clock: the same ops as ranks
// as threads record.
TEST(RunProcessesCli, TheirTraceHoldsEveryRanksOpsAsThreadsRecordThem) {
  if (!have_mpirun()) GTEST_SKIP() << "no mpirun";
  const auto dir = cli_test::fresh_dir("tandem-processes", "trace");
  const std::string scenario = scenario_in(dir, "tp2pp2", "  type: hybrid\n  tensor_model_parallel_size: 2\n  pipeline_model_parallel_size: 2\n");
  const cli_test::CliRun processes = run_processes(4, "run " + scenario + " --iterations 2 --trace " + (dir / "p.json").string());
  const cli_test::CliRun threads = cli_test::run_tandem("run " + scenario + " --iterations 2 --trace " + (dir / "t.json").string());
  ASSERT_EQ(processes.status, 0) << processes.err;
  ASSERT_EQ(threads.status, 0) << threads.err;
  const nlohmann::json p = nlohmann::json::parse(cli_test::read_file(dir / "p.json"));
  const nlohmann::json t = nlohmann::json::parse(cli_test::read_file(dir / "t.json"));
  EXPECT_EQ(p["records"].size(), t["records"].size());
  std::set<int> ranks;
  for (const auto& r : p["records"]) ranks.insert(r[0].get<int>());
  EXPECT_EQ(ranks, (std::set<int>{0, 1, 2, 3}));
  const auto ops = [](const nlohmann::json& j) {
    std::set<std::string> names;
    for (const auto& o : j["ops"]) names.insert(o.get<std::string>());
    return names;
  };
  EXPECT_EQ(ops(p), ops(t));
}

TEST(RunProcessesCli, AProcessCountThatIsNotTheStrategysIsRefused) {
  if (!have_mpirun()) GTEST_SKIP() << "no mpirun";
  const cli_test::CliRun run = run_processes(3, "run gpt-tiny-localhost --iterations 1");
  EXPECT_EQ(run.status, 2) << run.err;
  EXPECT_NE(run.err.find("--backend"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("mpirun -np 2"), std::string::npos) << run.err;
}

}  // namespace
}  // namespace tandem
