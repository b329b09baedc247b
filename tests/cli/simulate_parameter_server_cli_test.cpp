// Parameter servers from a scenario (strategy.parameter_servers, issue 16): simulated on 100 GbE
// H100 nodes, where the servers' links carry every worker's whole gradient (incast on push, the
// same out on pull) and NVLink's all-reduce inside a node has no counterpart; refused at the field
// where they do not apply.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>

#include "tests/cli/cli_test_support.hpp"

namespace tandem {
namespace {

std::string scenario(int workers, int servers, const std::string& extra = "", const std::string& type = "data_parallel") {
  return "name: ps\nmodel: gpt2-1.5b\ncluster: h100-64-ethernet-100g\n"
         "training: {global_batch_size: " + std::to_string(workers) + ", micro_batch_size: 1, seq_length: 1024}\n"
         "strategy:\n  type: " + type + "\n  data_parallel_size: " + std::to_string(workers) +
         "\n  parameter_servers: " + std::to_string(servers) + "\n" + extra;
}

cli_test::CliRun simulate(const std::string& name, const std::string& text, const std::string& args = "") {
  return cli_test::run_tandem("simulate " + cli_test::write_in_fresh_dir("tandem-ps", name, "ps.yaml", text) + args);
}

double iteration_s(const cli_test::CliRun& run) {
  return nlohmann::json::parse(run.out)["iteration_time_s"].get<double>();
}

TEST(SimulateParameterServerCli, ServersSumWhatTheWorkersPushAndMoreServersShareTheLoad) {
  // 8 workers on one node, 2 or 8 servers on the next: each server receives 8 / S of every
  // worker's 3.1 GB of gradients at 12.5 GB/s, and sends as much back.
  const cli_test::CliRun two = simulate("two", scenario(8, 2), " --json -");
  const cli_test::CliRun eight = simulate("eight", scenario(8, 8), " --json -");
  ASSERT_EQ(two.status, 0) << two.err;
  ASSERT_EQ(eight.status, 0) << eight.err;
  const double bytes = 2 * 1.56e9, link = 12.5e9;
  // At least the servers' ingress and egress; eight servers take at least 3x less than two.
  EXPECT_GT(iteration_s(two), 2 * 8 * bytes / 2 / link);
  EXPECT_GT(iteration_s(eight), 2 * 8 * bytes / 8 / link);
  EXPECT_LT(iteration_s(eight), iteration_s(two) / 3);
  // The plain all-reduce of the same 8 replicas stays inside the node (NVLink): far faster.
  const cli_test::CliRun reduce = simulate("reduce", scenario(8, 0), " --json -");
  ASSERT_EQ(reduce.status, 0) << reduce.err;
  EXPECT_LT(iteration_s(reduce), iteration_s(eight) / 4);
}

TEST(SimulateParameterServerCli, ServersOnCpuHostsAreBoundByTheirLinksAsGpuServersAreAtLessCost) {
  // The same 8 workers and 8 servers, the servers on the H100s of the next node or on 8 CPU hosts
  // of one 100 GbE port each (the ranks after the workers: the cluster's CPU group).
  const cli_test::CliRun gpu = cli_test::run_tandem("simulate gpt2-1.5b-ps-ethernet --json -");
  const cli_test::CliRun cpu = cli_test::run_tandem("simulate gpt2-1.5b-ps-cpu-hosts --json -");
  ASSERT_EQ(gpu.status, 0) << gpu.err;
  ASSERT_EQ(cpu.status, 0) << cpu.err;
  const nlohmann::json on_cpu = nlohmann::json::parse(cpu.out), on_gpu = nlohmann::json::parse(gpu.out);
  // The servers' sums sit in the CPU hosts' memory; the workers' state on the H100s.
  bool cpu_holds_sums = false;
  for (const auto& group : on_cpu["memory"])
    if (group["device"] == "CPU-Socket-32C") cpu_holds_sums = group["at_peak_bytes"]["comm_buffers"].get<double>() > 0;
  EXPECT_TRUE(cpu_holds_sums) << on_cpu["memory"].dump();
  // The links bound the step (each server's 1/8 of 8 workers' 3.1 GB in and out at 12.5 GB/s):
  // the hosts' cores sum at 200 GB/s of memory bandwidth, well inside it.
  const double links_s = 2 * 8 * 2 * 1.56e9 / 8 / 12.5e9;
  EXPECT_GT(iteration_s(cpu), links_s);
  EXPECT_NEAR(iteration_s(cpu) / iteration_s(gpu), 1.0, 0.1);
  EXPECT_LT(on_cpu["usd_per_iteration"].get<double>(), 0.8 * on_gpu["usd_per_iteration"].get<double>());
}

TEST(SimulateParameterServerCli, AStaleUpdateHidesThePullBehindTheNextStep) {
  // Synchronously a step pushes (during backward) and then pulls (after it): the servers' ingress
  // and then their egress. With staleness 1 a step pulls the previous step's sums while it pushes
  // its own, each direction of the links busy at once: at most the pushes' time and the compute.
  const cli_test::CliRun synchronous = simulate("sync", scenario(8, 8), " --json -");
  const cli_test::CliRun stale = simulate("stale", scenario(8, 8, "  parameter_server_staleness: 1\n"), " --json -");
  ASSERT_EQ(synchronous.status, 0) << synchronous.err;
  ASSERT_EQ(stale.status, 0) << stale.err;
  const double pushes_s = 8 * 2 * 1.56e9 / 8 / 12.5e9;  // each server's ingress: 1/8 of 8 workers' gradients
  EXPECT_GT(iteration_s(synchronous), 2 * pushes_s);
  EXPECT_GT(iteration_s(stale), pushes_s);
  EXPECT_LT(iteration_s(stale), 0.6 * iteration_s(synchronous));
  // Staleness 2 overlaps no more than 1 (the servers still take each step's pushes in turn), and
  // the first steps, which pull nothing, are not what is measured.
  const cli_test::CliRun staler = simulate("staler", scenario(8, 8, "  parameter_server_staleness: 2\n"), " --json -");
  ASSERT_EQ(staler.status, 0) << staler.err;
  EXPECT_NEAR(iteration_s(staler), iteration_s(stale), 0.01 * iteration_s(stale));
  EXPECT_NE(nlohmann::json::parse(stale.out)["strategy"].get<std::string>().find("staleness 1"), std::string::npos)
      << stale.out;
  // The prediction says what it does not price: the progress a stale update loses.
  EXPECT_NE(nlohmann::json::parse(stale.out)["caveats"].dump().find("1 step(s) stale"), std::string::npos) << stale.out;
  EXPECT_TRUE(nlohmann::json::parse(synchronous.out)["caveats"].empty()) << synchronous.out;
}

TEST(SimulateParameterServerCli, WhereServersDoNotApplyTheFieldIsNamed) {
  const auto expect_field = [](const cli_test::CliRun& run, const std::string& words) {
    EXPECT_EQ(run.status, 2) << run.err;
    EXPECT_NE(run.err.find("ps.yaml:"), std::string::npos) << run.err;
    EXPECT_NE(run.err.find("strategy.parameter_servers"), std::string::npos) << run.err;
    EXPECT_NE(run.err.find(words), std::string::npos) << run.err;
  };
  expect_field(simulate("hybrid", scenario(8, 2, "", "hybrid")), "data_parallel strategy");
  expect_field(simulate("devices", scenario(60, 8)), "needs 68 devices");
  expect_field(simulate("onebit", scenario(8, 2, "  gradient_compression: onebit\n")), "gradient_compression");
  expect_field(simulate("local", scenario(8, 2, "  local_sgd_steps: 4\n")), "local SGD");
  const cli_test::CliRun stale = simulate("stale", scenario(8, 0, "  parameter_server_staleness: 1\n"));
  EXPECT_EQ(stale.status, 2) << stale.err;
  EXPECT_NE(stale.err.find("strategy.parameter_server_staleness"), std::string::npos) << stale.err;
  const cli_test::CliRun negative = simulate("negative", scenario(8, -1));
  EXPECT_EQ(negative.status, 2) << negative.err;
  EXPECT_NE(negative.err.find("strategy.parameter_servers"), std::string::npos) << negative.err;
}

// Servers that step the optimizer (strategy.parameter_server_optimizer): the workers' memory
// loses the optimizer state, which the servers hold a share each of; the workers' AdamW leaves their
// step. Refused where it cannot apply, at its field.
TEST(SimulateParameterServerCli, ServersSteppingTheOptimizerTakeItsStateAndItsStepFromTheWorkers) {
  const cli_test::CliRun sums = simulate("sums", scenario(8, 8), " --json -");
  const cli_test::CliRun steps = simulate("steps", scenario(8, 8, "  parameter_server_optimizer: true\n"), " --json -");
  ASSERT_EQ(sums.status, 0) << sums.err;
  ASSERT_EQ(steps.status, 0) << steps.err;
  const auto optimizer_bytes = [](const cli_test::CliRun& run) {
    return nlohmann::json::parse(run.out)["memory"][0]["at_peak_bytes"]["optimizer_state"].get<double>();
  };
  // The group's fullest device: a worker with the whole optimizer state, or (servers stepping)
  // a worker with none of it.
  EXPECT_GT(optimizer_bytes(sums), 12 * 1.5e9 * 0.9);
  EXPECT_EQ(optimizer_bytes(steps), 0);
  EXPECT_LT(iteration_s(steps), iteration_s(sums));
  const auto refused = [](const cli_test::CliRun& run) {
    EXPECT_EQ(run.status, 2) << run.err;
    EXPECT_NE(run.err.find("strategy.parameter_server_optimizer"), std::string::npos) << run.err;
  };
  refused(simulate("no-servers", scenario(8, 0, "  parameter_server_optimizer: true\n")));
  refused(simulate("stale-servers", scenario(8, 2, "  parameter_server_optimizer: true\n  parameter_server_staleness: 1\n")));
}

// Asynchronous servers (strategy.parameter_server_asynchronous): each server applies one worker's
// push at a time, so its links carry what they carry synchronously, one worker after the other;
// with equal workers the step costs about a synchronous one. The same input gives the same answer.
TEST(SimulateParameterServerCli, AsynchronousServersServeOneWorkerAtATimeAtTheLinksPace) {
  const std::string async = "  parameter_server_asynchronous: true\n";
  const cli_test::CliRun synchronous = simulate("steps", scenario(8, 8, "  parameter_server_optimizer: true\n"), " --json -");
  const cli_test::CliRun a = simulate("async", scenario(8, 8, async), " --json -");
  const cli_test::CliRun again = simulate("again", scenario(8, 8, async), " --json -");
  ASSERT_EQ(synchronous.status, 0) << synchronous.err;
  ASSERT_EQ(a.status, 0) << a.err;
  ASSERT_EQ(again.status, 0) << again.err;
  EXPECT_EQ(iteration_s(a), iteration_s(again));
  const double pushes_s = 8 * 2 * 1.56e9 / 8 / 12.5e9;  // each server's ingress: 1/8 of 8 workers' gradients
  EXPECT_GT(iteration_s(a), pushes_s);
  EXPECT_LT(iteration_s(a), 1.25 * iteration_s(synchronous));
  EXPECT_NE(nlohmann::json::parse(a.out)["strategy"].get<std::string>().find("asynchronous"), std::string::npos) << a.out;
  // Refused at its field where it cannot apply.
  const cli_test::CliRun bounded = simulate("bounded", scenario(8, 8, async + "  parameter_server_staleness: 1\n"));
  EXPECT_EQ(bounded.status, 2) << bounded.err;
  EXPECT_NE(bounded.err.find("strategy.parameter_server_asynchronous"), std::string::npos) << bounded.err;
  const cli_test::CliRun jitter = simulate("jitter", scenario(8, 8, async + "  parameter_server_jitter: 2\n"));
  EXPECT_EQ(jitter.status, 2) << jitter.err;
  EXPECT_NE(jitter.err.find("parameter_server_jitter"), std::string::npos) << jitter.err;
}

}  // namespace
}  // namespace tandem
