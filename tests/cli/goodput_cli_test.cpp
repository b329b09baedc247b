// `tandem goodput` end to end: the real binary on a small bundled scenario (one simulated
// iteration, then the horizon as events), its accounting, its determinism per seed, and bad input
// in every new field refused with file, line and field (exit 2).
#include <gtest/gtest.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "tests/cli/cli_test_support.hpp"

namespace tandem {
namespace {

namespace fs = std::filesystem;
using cli_test::CliRun;
using cli_test::run_tandem;

// A short horizon and few trials keep each run well under a second after the simulation.
const std::string kQuick = " --horizon 2d --trials 20 --sweep-points 9";

nlohmann::json goodput_json(const std::string& args) {
  const CliRun run = run_tandem("goodput goodput-gpt2-124m-straggler" + kQuick + " --json - " + args);
  EXPECT_EQ(run.status, 0) << run.err;
  return run.status == 0 ? nlohmann::json::parse(run.out) : nlohmann::json{};
}

TEST(GoodputCli, PrintsGoodputTimeLostAndTheIntervalAgainstYoungAndDaly) {
  const CliRun run = run_tandem("goodput goodput-gpt2-124m-straggler" + kQuick);
  ASSERT_EQ(run.status, 0) << run.err;
  for (const char* needle : {"goodput", "95% CI", "tokens/s", "Young", "Daly", "straggler", "rank 3: compute x1.30",
                             "lost work", "to train", "shrink"})
    EXPECT_NE(run.out.find(needle), std::string::npos) << needle << "\n" << run.out;
}

TEST(GoodputCli, TheTimeOfTheHorizonIsAccountedFor) {
  const nlohmann::json j = goodput_json("--seed 3");
  ASSERT_FALSE(j.is_null());
  const auto& t = j["time_s"];
  double sum = t["useful"].get<double>() + t["checkpoint"].get<double>() + t["degraded"].get<double>() +
               t["slowed"].get<double>() + t["regrow"].get<double>();
  for (const auto& [cause, parts] : t["by_cause"].items())
    sum += parts["lost_work"].get<double>() + parts["restart"].get<double>() + parts["waiting"].get<double>();
  EXPECT_NEAR(sum, j["horizon_s"].get<double>(), 1e-6 * j["horizon_s"].get<double>());
  EXPECT_DOUBLE_EQ(j["horizon_s"].get<double>(), 2 * 86400.0);
  EXPECT_GT(j["goodput"]["mean"].get<double>(), 0.5);
  EXPECT_LT(j["goodput"]["mean"].get<double>(), 1.0);
  EXPECT_LE(j["goodput"]["ci95_low"].get<double>(), j["goodput"]["mean"].get<double>());
}

// Shrink re-plans on the survivors: 8 micro-batches of 8 sequences do not split over 7 replicas,
// so the survivors' simulated throughput falls below the 7/8 linear scaling would say (a smaller
// micro-batch evens the split at some efficiency cost); it is 1 at full width.
TEST(GoodputCli, ShrinkingUsesTheSurvivorsSimulatedThroughput) {
  const nlohmann::json j = goodput_json("--seed 3");
  ASSERT_FALSE(j.is_null());
  const auto shrunk = j["shrunk_throughput"].get<std::vector<double>>();
  ASSERT_EQ(shrunk.size(), 9u);
  EXPECT_DOUBLE_EQ(shrunk[8], 1.0);
  EXPECT_GT(shrunk[7], 0.3);
  EXPECT_LT(shrunk[7], 7.0 / 8 - 0.05);
  for (int a = 1; a < 4; ++a) EXPECT_NEAR(shrunk[a], shrunk[4] * a / 4, 1e-12);  // beyond the simulated: linear
}

TEST(GoodputCli, TheSameSeedGivesTheSameAnswerBitForBitAndAnotherDrawsAnother) {
  const nlohmann::json a = goodput_json("--seed 7");
  const nlohmann::json b = goodput_json("--seed 7");
  const nlohmann::json c = goodput_json("--seed 8");
  EXPECT_EQ(a.dump(), b.dump());
  EXPECT_NE(a["goodput"].dump(), c["goodput"].dump());
}

// The checkpoint's writes are simulated through the cluster's network (two nodes here), and the
// asynchronous one beside training: the write there is no faster than alone, and an iteration
// beside it no faster than the plain one.
TEST(GoodputCli, TheCheckpointsWritesAreSimulatedBesideTraining) {
  const nlohmann::json j = goodput_json("--seed 3");
  ASSERT_FALSE(j.is_null());
  const auto& c = j["checkpoint"];
  EXPECT_TRUE(c["storage_simulated"].get<bool>()) << c.dump();
  EXPECT_EQ(c["mode"], "async");
  EXPECT_GE(c["background_write_s"].get<double>(), c["write_s"].get<double>() * (1 - 1e-9)) << c.dump();
  EXPECT_GE(c["iteration_beside_write_s"].get<double>(), j["iteration_s"].get<double>() * (1 - 1e-9)) << c.dump();
  EXPECT_GE(c["contention_s"].get<double>(), 0);
  // The per-node path of 50 GB/s, shared by a node's 4 GPUs: 1.74 GB in 2 node shares.
  EXPECT_NEAR(c["write_s"].get<double>(), c["bytes"].get<double>() / 2 / 50e9, 1e-3) << c.dump();
}

// One trial's timeline, for plots: steps in time order from a running start, each a state and the
// throughput it runs at (0 unless running); failures only add up; a week of this flaky job has some,
// each followed by a restart (or a shrink: running below full speed).
TEST(GoodputCli, TheJsonCarriesOneTrialsTimeline) {
  const CliRun run = run_tandem("goodput goodput-gpt2-124m-straggler --horizon 7d --trials 5 --sweep-points 9 --seed 3 --json -");
  ASSERT_EQ(run.status, 0) << run.err;
  const nlohmann::json j = nlohmann::json::parse(run.out);
  const auto& t = j["timeline"];
  ASSERT_GE(t.size(), 3u) << t.dump();
  EXPECT_EQ(t[0]["t_s"].get<double>(), 0);
  EXPECT_EQ(t[0]["state"], "running");
  int failures = 0;
  double last = -1;
  for (const auto& p : t) {
    EXPECT_GT(p["t_s"].get<double>(), last) << p.dump();
    last = p["t_s"].get<double>();
    EXPECT_LE(p["t_s"].get<double>(), 7 * 86400.0);
    const std::string state = p["state"];
    EXPECT_TRUE(state == "running" || state == "waiting" || state == "restarting" || state == "regrowing") << state;
    const double throughput = p["throughput"].get<double>();
    EXPECT_GE(throughput, 0);
    EXPECT_LE(throughput, 1);
    if (state != "running") EXPECT_EQ(throughput, 0) << p.dump();
    EXPECT_GE(p["failures"].get<int>(), failures);
    failures = p["failures"].get<int>();
  }
  EXPECT_GE(failures, 1) << t.dump();
}

TEST(GoodputCli, TheJsonFileIsWrittenWhole) {
  const fs::path dir = cli_test::fresh_dir("tandem-goodput", "json");
  const std::string path = (dir / "goodput.json").string();
  const CliRun run = run_tandem("goodput goodput-gpt2-124m-straggler" + kQuick + " --json " + path);
  ASSERT_EQ(run.status, 0) << run.err;
  const nlohmann::json j = nlohmann::json::parse(cli_test::read_file(path));
  EXPECT_EQ(j["scenario"], "goodput-gpt2-124m-straggler");
  EXPECT_EQ(j["stragglers"][0]["rank"], 3);
  fs::remove_all(dir);
}

// A small reliability scenario with some lines replaced, written beside the test.
std::string scenario_with(const std::vector<std::pair<std::string, std::string>>& edits) {
  std::string text =
      "name: bad-goodput\n"
      "model: gpt2-124m\n"
      "cluster: tiny-h100\n"
      "training: { global_batch_size: 64, micro_batch_size: 8, seq_length: 1024 }\n"
      "strategy: { type: data_parallel, data_parallel_size: 8 }\n"
      "stragglers:\n"
      "  - rank: 3\n"
      "    compute_slowdown: 1.3\n"
      "reliability:\n"
      "  failures: llama3-405b-h100\n"
      "  repair_hours: 24\n"
      "  policy: restart_on_spares\n"
      "  checkpoint: { mode: sync, interval: auto }\n"
      "  storage: { aggregate_gb_per_s: 2000, per_node_gb_per_s: 50 }\n"
      "  restart: { relaunch_s: 60, init_s: 30 }\n";
  for (const auto& [from, to] : edits) {
    if (from.empty()) continue;
    const auto at = text.find(from);
    if (at == std::string::npos) throw std::logic_error("no '" + from + "' in the scenario");
    text.replace(at, from.size(), to);
  }
  const fs::path dir = cli_test::fresh_dir("tandem-goodput", "bad");
  const fs::path path = dir / ("s" + std::to_string(std::hash<std::string>{}(text)) + ".yaml");
  std::ofstream(path) << text;
  return path.string();
}
std::string scenario_with(const std::string& from, const std::string& to) { return scenario_with({{from, to}}); }

// Shrink re-planned by the search, on the two 4-GPU nodes of tiny-h100. A tensor-4 x pipeline-2
// job has one replica spanning both nodes: keeping its layout, a node's failure leaves nothing to
// run on (refused), while the search finds a plan for the surviving node.
const std::string kTensorPipelineJob = "strategy: { type: hybrid, tensor_model_parallel_size: 4, pipeline_model_parallel_size: 2 }";
const std::string kSmallSearch =
    "\nsearch: { tensor_model_parallel_size: [2, 4], pipeline_model_parallel_size: [1, 2], micro_batch_size: [4, 8] }";

TEST(GoodputCli, ReplanningBySearchKeepsAJobWhoseReplicaSpansNodesRunningOnTheSurvivor) {
  const std::pair<std::string, std::string> job{"strategy: { type: data_parallel, data_parallel_size: 8 }", kTensorPipelineJob};
  const CliRun layout = run_tandem("goodput " + scenario_with({job, {"policy: restart_on_spares", "policy: shrink"}}) + kQuick);
  EXPECT_EQ(layout.status, 2) << layout.err;
  EXPECT_NE(layout.err.find("replan: search"), std::string::npos) << layout.err;

  const std::string replan = scenario_with(
      {job, {"  repair_hours: 24\n", "  failure_rate_scale: 100\n  repair_hours: 24\n"},
       {"policy: restart_on_spares", "policy: shrink\n  replan: search"}, {"restart: { relaunch_s: 60, init_s: 30 }",
                                                                                 "restart: { relaunch_s: 60, init_s: 30 }" + kSmallSearch}});
  const CliRun run = run_tandem("goodput " + replan + kQuick + " --json -");
  ASSERT_EQ(run.status, 0) << run.err;
  const nlohmann::json j = nlohmann::json::parse(run.out);
  EXPECT_EQ(j["shrink_unit"], "nodes");
  const auto shrunk = j["shrunk_throughput"].get<std::vector<double>>();
  ASSERT_EQ(shrunk.size(), 3u);  // 0, 1 and 2 nodes alive
  EXPECT_DOUBLE_EQ(shrunk[2], 1.0);
  EXPECT_GT(shrunk[1], 0.2);  // half the GPUs: near half the throughput, not nothing
  EXPECT_LE(shrunk[1], 1.0);
  const std::string plan = j["replanned_plans"][1].get<std::string>();
  EXPECT_NE(plan.find("pp=1"), std::string::npos) << plan;  // 4 GPUs: no room for tensor 4 x pipeline 2
  EXPECT_GT(j["time_s"]["degraded"].get<double>(), 0);      // some trial ran on one node
  // Tensor 4 x pipeline 2 is a poor plan for GPT-2 124M on 8 GPUs: the search says so.
  EXPECT_GT(j["replanned_full_width_speedup"].get<double>(), 1.02);
  const CliRun text = run_tandem("goodput " + replan + kQuick);
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_NE(text.out.find("1/2 nodes"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("re-planned: " + plan), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("`tandem search` it"), std::string::npos) << text.out;
}

// A search that finds nothing for the survivors is refused at the replan field, with its line.
TEST(GoodputCli, ReplanningWithNoPlanForTheSurvivorsIsRefusedAtItsLine) {
  const std::string path = scenario_with(
      {{"strategy: { type: data_parallel, data_parallel_size: 8 }", kTensorPipelineJob},
       {"policy: restart_on_spares", "policy: shrink\n  replan: search"},
       {"restart: { relaunch_s: 60, init_s: 30 }",
        "restart: { relaunch_s: 60, init_s: 30 }\nsearch: { tensor_model_parallel_size: [4], pipeline_model_parallel_size: [2] }"}});
  const CliRun run = run_tandem("goodput " + path + kQuick);
  EXPECT_EQ(run.status, 2) << run.err;
  EXPECT_NE(run.err.find(path + ":13: field 'reliability.replan'"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("no plan that fits on 1 surviving nodes"), std::string::npos) << run.err;
}

// Where the layout can shrink (two tensor-4 replicas, one per node), the search's plan for the
// surviving node is at least as fast as the layout's one replica: that plan is in its space.
TEST(GoodputCli, ReplanningBySearchIsNeverSlowerThanKeepingTheLayout) {
  const std::pair<std::string, std::string> job{"strategy: { type: data_parallel, data_parallel_size: 8 }",
                                                "strategy: { type: hybrid, tensor_model_parallel_size: 4, data_parallel_size: 2 }"};
  const std::pair<std::string, std::string> shrink{"policy: restart_on_spares", "policy: shrink"};
  const CliRun layout = run_tandem("goodput " + scenario_with({job, shrink}) + kQuick + " --json -");
  ASSERT_EQ(layout.status, 0) << layout.err;
  const CliRun replan =
      run_tandem("goodput " +
                 scenario_with({job, {"policy: restart_on_spares", "policy: shrink\n  replan: search"},
                                {"restart: { relaunch_s: 60, init_s: 30 }", "restart: { relaunch_s: 60, init_s: 30 }" + kSmallSearch}}) +
                 kQuick + " --json -");
  ASSERT_EQ(replan.status, 0) << replan.err;
  const nlohmann::json a = nlohmann::json::parse(layout.out), b = nlohmann::json::parse(replan.out);
  EXPECT_EQ(a["shrink_unit"], "replicas");
  const double kept = a["shrunk_throughput"][1].get<double>(), searched = b["shrunk_throughput"][1].get<double>();
  EXPECT_GT(kept, 0.2);
  EXPECT_GE(searched, kept - 1e-9) << b["replanned_plans"].dump();
}

// A straggler that comes and goes: the iteration with it is simulated once, and its episodes take
// their share of the horizon as `slowed` time; the iteration `simulate` predicts is without it.
TEST(GoodputCli, TransientStragglersCostTheirEpisodesShareOfTheHorizon) {
  const std::string path = scenario_with("compute_slowdown: 1.3", "compute_slowdown: 1.3\n  - rank: 5\n    compute_slowdown: 2\n"
                                         "    episodes: {every: 6h, lasting: 1h}");
  const CliRun run = run_tandem("goodput " + path + " --horizon 30d --trials 40 --sweep-points 9 --json -");
  ASSERT_EQ(run.status, 0) << run.err;
  const nlohmann::json j = nlohmann::json::parse(run.out);
  ASSERT_EQ(j["slowdowns"].size(), 1u) << j.dump();
  const double throughput = j["slowdowns"][0]["throughput"].get<double>();
  EXPECT_GT(throughput, 0.4);  // rank 5 at half speed holds back a synchronous job: about half
  EXPECT_LT(throughput, 0.9);
  EXPECT_NE(j["slowdowns"][0]["straggler"].get<std::string>().find("rank 5: compute x2.00"), std::string::npos);
  // In an episode 1 h out of every 7 on average, losing 1 - throughput of it (the job is running
  // most of the time at these failure rates).
  const double expected = (1 - throughput) / 7;
  EXPECT_NEAR(j["time_s"]["slowed"].get<double>() / j["horizon_s"].get<double>(), expected, 0.2 * expected);
  // Only the permanent straggler is in the simulated iteration.
  ASSERT_EQ(j["stragglers"].size(), 1u);
  EXPECT_EQ(j["stragglers"][0]["rank"].get<int>(), 3);
  const CliRun simulate = run_tandem("simulate " + path + " --json -");
  ASSERT_EQ(simulate.status, 0) << simulate.err;
  EXPECT_DOUBLE_EQ(nlohmann::json::parse(simulate.out)["iteration_time_s"].get<double>(), j["iteration_s"].get<double>());
  EXPECT_NE(nlohmann::json::parse(simulate.out)["caveats"].dump().find("stragglers[1]"), std::string::npos) << simulate.out;
}

// Re-balancing an episode: 10 min after it starts the batch shares are re-split by speed (rank 5
// at half speed gets fewer micro-batches), which wins back part of the throughput; the week loses
// less to the episodes than without it. (Whole micro-batches move: with one per replica there
// would be nothing to re-split.)
TEST(GoodputCli, ReBalancingTransientStragglersWinsBackThroughput) {
  const std::string episodes = "compute_slowdown: 1.3\n  - rank: 5\n    compute_slowdown: 2\n    episodes: {every: 6h, lasting: 1h}";
  const std::string args = " --horizon 30d --trials 40 --sweep-points 9 --json -";
  // (Each scenario_with starts a fresh folder: one file at a time.)
  // Micro-batches of 2: four per replica, so that a re-split has whole micro-batches to move.
  const std::pair<std::string, std::string> smaller{"micro_batch_size: 8", "micro_batch_size: 2"};
  const CliRun a = run_tandem("goodput " + scenario_with({smaller, {"compute_slowdown: 1.3", episodes}}) + args);
  ASSERT_EQ(a.status, 0) << a.err;
  const CliRun b = run_tandem("goodput " +
                              scenario_with({smaller,
                                             {"compute_slowdown: 1.3", episodes},
                                             {"  repair_hours: 24\n", "  repair_hours: 24\n  rebalance_after: 10min\n"}}) +
                              args);
  ASSERT_EQ(b.status, 0) << b.err;
  const nlohmann::json ja = nlohmann::json::parse(a.out), jb = nlohmann::json::parse(b.out);
  const auto& s = jb["slowdowns"][0];
  EXPECT_GT(s["rebalanced_throughput"].get<double>(), s["throughput"].get<double>()) << s.dump();
  // The healed rank given too little work until the split goes back: no faster than between
  // episodes (here rank 3, slow all along, bounds both).
  EXPECT_LE(s["throughput_after"].get<double>(), 1.0) << s.dump();
  EXPECT_DOUBLE_EQ(jb["rebalance_after_s"].get<double>(), 600);
  EXPECT_DOUBLE_EQ(s["resplit_s"].get<double>(), 0);  // batch shares: nothing moves
  EXPECT_LT(jb["time_s"]["slowed"].get<double>(), ja["time_s"]["slowed"].get<double>());
  EXPECT_GT(jb["goodput"]["mean"].get<double>(), ja["goodput"]["mean"].get<double>());
  // Without a transient straggler there is nothing to re-balance: refused at the field.
  const std::string none = scenario_with("  repair_hours: 24\n", "  repair_hours: 24\n  rebalance_after: 10min\n");
  const CliRun refused = run_tandem("goodput " + none + kQuick);
  EXPECT_EQ(refused.status, 2) << refused.err;
  EXPECT_NE(refused.err.find("reliability.rebalance_after"), std::string::npos) << refused.err;
}

// A pipeline re-balanced moves layers between its stages: each re-split's cost is stated and
// charged; batch shares move nothing (the data-parallel job above: 0).
TEST(GoodputCli, ReSplittingAPipelinesLayersIsChargedItsTransfer) {
  const std::string episodes = "compute_slowdown: 1.3\n  - rank: 1\n    compute_slowdown: 3\n    episodes: {every: 6h, lasting: 1h}";
  const std::string path = scenario_with(
      {{"strategy: { type: data_parallel, data_parallel_size: 8 }",
        "strategy: { type: hybrid, pipeline_model_parallel_size: 2, data_parallel_size: 4 }"},
       {"micro_batch_size: 8", "micro_batch_size: 2"},
       {"compute_slowdown: 1.3", episodes},
       {"  repair_hours: 24\n", "  repair_hours: 24\n  rebalance_after: 10min\n"}});
  const CliRun run = run_tandem("goodput " + path + " --horizon 30d --trials 20 --sweep-points 9 --json -");
  ASSERT_EQ(run.status, 0) << run.err;
  const nlohmann::json j = nlohmann::json::parse(run.out);
  const auto& s = j["slowdowns"][0];
  EXPECT_GT(s["resplit_s"].get<double>(), 0) << s.dump();
  EXPECT_LT(s["resplit_s"].get<double>(), 1.0) << s.dump();  // GPT-2 124M: ~100 MB per layer over 50 GB/s
  const CliRun text = run_tandem("goodput " + path + " --horizon 30d --trials 20 --sweep-points 9");
  ASSERT_EQ(text.status, 0) << text.err;
  EXPECT_NE(text.out.find("each re-split moves layers"), std::string::npos) << text.out;
}

// Episodes are events every trial plays: a minute apart over a century they would run for hours,
// so they are refused at the field before anything is simulated (within the budget: they run).
TEST(GoodputCli, TooManySlowdownEpisodesAreRefusedAtTheirField) {
  const std::string episodes = "compute_slowdown: 1.3\n    episodes: {every: 60s, lasting: 1s}";
  const CliRun refused = run_tandem("goodput " + scenario_with("compute_slowdown: 1.3", episodes) + " --horizon 36500d --trials 10");
  EXPECT_EQ(refused.status, 2) << refused.err;
  EXPECT_NE(refused.err.find(":7: field 'stragglers[0].episodes.every'"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("space them out"), std::string::npos) << refused.err;
  const CliRun fits = run_tandem("goodput " + scenario_with("compute_slowdown: 1.3", episodes) + kQuick);
  EXPECT_EQ(fits.status, 0) << fits.err;
}

TEST(GoodputCli, EveryNewFieldIsCheckedWithFileLineAndField) {
  struct Case {
    std::string from, to, field;
    int line;
  };
  const std::vector<Case> cases = {
      {"policy: restart_on_spares", "policy: pray", "reliability.policy", 12},
      {"  repair_hours: 24\n", "", "reliability", 9},  // missing: reported at its section
      {"repair_hours: 24", "repair_hours: -3", "reliability.repair_hours", 11},
      {"failures: llama3-405b-h100", "failures: no-such-profile", "reliability.failures", 10},
      {"interval: auto", "interval: soon", "reliability.checkpoint.interval", 13},
      // A checkpoint every nanosecond; a horizon of 1e300 days (its Monte Carlo never ended).
      {"interval: auto", "interval: 1e-9", "reliability.checkpoint.interval", 13},
      {"policy: restart_on_spares", "policy: restart_on_spares\n  horizon: 1e300d", "reliability.horizon", 13},
      {"mode: sync", "mode: eventually", "reliability.checkpoint.mode", 13},
      {"aggregate_gb_per_s: 2000", "aggregate_gb_per_s: 0", "reliability.storage.aggregate_gb_per_s", 14},
      {"relaunch_s: 60", "relaunch_s: nan", "reliability.restart.relaunch_s", 15},
      {"rank: 3", "rank: 8", "stragglers[0].rank", 7},
      {"compute_slowdown: 1.3", "compute_slowdown: 0.5", "stragglers[0].compute_slowdown", 8},
      {"compute_slowdown: 1.3", "compute_slowdown: [1.5, 1.2]", "stragglers[0].compute_slowdown", 8},
      {"policy: restart_on_spares", "policy: restart_on_spares\n  spare_nodes: -1", "reliability.spare_nodes", 13},
      {"policy: restart_on_spares", "policy: shrink\n  replan: sideways", "reliability.replan", 13},
      {"policy: restart_on_spares", "policy: restart_on_spares\n  replan: search", "reliability.replan", 13},
      {"  restart:", "  bogus: 1\n  restart:", "reliability.bogus", 15},
      // Episodes: a gap under a minute, a length given as no duration, a key of neither.
      {"compute_slowdown: 1.3", "compute_slowdown: 1.3\n    episodes: {every: 10s, lasting: 1h}",
       "stragglers[0].episodes.every", 9},
      {"compute_slowdown: 1.3", "compute_slowdown: 1.3\n    episodes: {every: 6h, lasting: often}",
       "stragglers[0].episodes.lasting", 9},
      {"compute_slowdown: 1.3", "compute_slowdown: 1.3\n    episodes: {every: 6h, lasting: 1h, when: hot}",
       "stragglers[0].episodes.when", 9},
  };
  for (const Case& c : cases) {
    const std::string path = scenario_with(c.from, c.to);
    const CliRun run = run_tandem("goodput " + path + kQuick);
    EXPECT_EQ(run.status, 2) << c.to << "\n" << run.out << run.err;
    EXPECT_NE(run.err.find(path + ":" + std::to_string(c.line)), std::string::npos) << c.to << ": " << run.err;
    EXPECT_NE(run.err.find(c.field), std::string::npos) << c.to << ": " << run.err;
  }
}

TEST(GoodputCli, BadCommandLineValuesAndMissingSectionsExitTwo) {
  const std::string path = scenario_with("", "");
  for (const char* args : {" --horizon 7x", " --horizon -1d", " --interval never", " --tokens 0", " --trials 0",
                            " --horizon 1e300d", " --horizon 1s", " --horizon 7d --interval 1e-9s",
                            " --horizon 36500d --trials 100000"}) {
    const CliRun run = run_tandem("goodput " + path + std::string(args));
    EXPECT_EQ(run.status, 2) << args << ": " << run.err;
    // The option at fault is the one named.
    const std::string option = std::string(args).find("--trials 1") != std::string::npos    ? "--trials"
                               : std::string(args).find("--interval") != std::string::npos ? "--interval"
                               : std::string(args).find("--horizon") != std::string::npos ? "--horizon"
                                                                                            : "";
    EXPECT_NE(run.err.find(option), std::string::npos) << args << ": " << run.err;
  }
  const CliRun plain = run_tandem("goodput gpt2-124m-dp8");
  EXPECT_EQ(plain.status, 2) << plain.err;
  EXPECT_NE(plain.err.find("reliability"), std::string::npos) << plain.err;
}

// `goodput --json` feeds `report --goodput`: the page draws the trial the JSON holds, one marked
// event per failure of its timeline.
TEST(GoodputCli, TheReportDrawsTheEstimatesTimelineWithEachFailureMarked) {
  const fs::path dir = cli_test::fresh_dir("tandem-goodput-report", "timeline");
  const std::string json = (dir / "goodput.json").string(), html = (dir / "report.html").string();
  const CliRun estimate = run_tandem("goodput goodput-gpt2-124m-straggler" + kQuick + " --json " + json);
  ASSERT_EQ(estimate.status, 0) << estimate.err;
  const CliRun report = run_tandem("report --goodput " + json + " -o " + html);
  ASSERT_EQ(report.status, 0) << report.err;
  std::ifstream in_json(json);
  const nlohmann::json j = nlohmann::json::parse(in_json);
  const int failures = j["timeline"].back()["failures"].get<int>();
  const std::string page = cli_test::read_file(html);
  EXPECT_NE(page.find("data-section=\"goodput\""), std::string::npos);
  int marked = 0;
  for (std::size_t at = page.find("<title>failure "); at != std::string::npos; at = page.find("<title>failure ", at + 1))
    ++marked;
  EXPECT_EQ(marked, failures);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tandem
