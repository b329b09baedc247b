// How fast the simulator is: wall time to simulate one data-parallel iteration of GPT-3 1.3B on
// 64, 512 and 4096 A100s, with every replica simulated and with replica folding. Each simulation
// runs in a forked child (one SimGrid engine per process); the time is the child's own simulate()
// wall time. The unfolded 64-device run is the reference: `vs_64_devices` is each run's time over
// it, and `vs_unfolded` a folded run's time over the unfolded run of the same size, all measured
// in the same process.
#include <benchmark/benchmark.h>
#include <nlohmann/json.hpp>

#include <map>

#include "platforms/cluster.hpp"
#include "scenarios/scenario.hpp"
#include "sim/simulation.hpp"
#include "strategies/data_parallel.hpp"
#include "strategies/models/presets.hpp"
#include "strategies/models/transformer.hpp"
#include "tests/sim/sim_test_support.hpp"

namespace {

using namespace tandem;

double g_reference_s = 0;
std::map<int, double> g_unfolded_s;  // by device count

void BM_DataParallelIteration_Gpt3_1_3B(benchmark::State& state) {
  const int devices = static_cast<int>(state.range(0));
  const bool folded = state.range(1) != 0;
  nlohmann::json last;
  for (auto _ : state) {
    auto child = sim_test::run_in_child([devices, folded] {
      const Cluster cluster = find_cluster("dgx-a100-4096");
      TrainingConfig training;
      training.global_batch_size = devices;
      training.micro_batch_size = 1;
      training.seq_length = 2048;
      ParallelConfig parallel;
      parallel.data_parallel_size = devices;
      DataParallel dp(std::make_shared<TransformerModel>(transformer_preset("gpt3-1.3b")), training, parallel, {});
      sim::SimulationOptions options;
      options.replica_folding = folded ? sim::ReplicaFolding::automatic : sim::ReplicaFolding::off;
      const sim::SimulationResult r = sim::simulate(dp, cluster, options);
      return nlohmann::json{{"wall_s", r.wall_time_s},
                            {"iteration_s", r.iteration_time_s},
                            {"ops", r.compute_ops + r.comm_ops},
                            {"executions", r.compute_executions}}
          .dump();
    });
    if (!child.ok) {
      state.SkipWithError(child.describe().c_str());
      return;
    }
    last = nlohmann::json::parse(child.output);
    state.SetIterationTime(last["wall_s"].get<double>());
  }
  const double wall = last["wall_s"].get<double>();
  if (devices == 64 && !folded) g_reference_s = wall;
  if (!folded) g_unfolded_s[devices] = wall;
  if (folded && g_unfolded_s.count(devices)) state.counters["vs_unfolded"] = wall / g_unfolded_s[devices];
  state.counters["devices"] = devices;
  state.counters["predicted_iteration_s"] = last["iteration_s"].get<double>();
  state.counters["ops_issued"] = last["ops"].get<double>();
  if (g_reference_s > 0) state.counters["vs_64_devices"] = wall / g_reference_s;
}
BENCHMARK(BM_DataParallelIteration_Gpt3_1_3B)
    ->ArgNames({"devices", "folded"})
    ->Args({64, 0})->Args({64, 1})->Args({512, 0})->Args({512, 1})->Args({4096, 0})->Args({4096, 1})
    ->UseManualTime()->Iterations(1)->Unit(benchmark::kSecond);

// Issue 3's yardstick: one iteration of GPT-3 175B on 1024 A100s, tensor 8 x pipeline 16 x data 8
// (the bundled scenario gpt3-175b-3d), relative to the 64-device data-parallel reference.
void BM_Hybrid3dIteration_Gpt3_175B_1024(benchmark::State& state) {
  nlohmann::json last;
  for (auto _ : state) {
    auto child = sim_test::run_in_child([] {
      const Scenario scenario = load_scenario("gpt3-175b-3d");
      auto strategy = make_strategy(scenario);
      const sim::SimulationResult r = sim::simulate(*strategy, scenario.cluster, scenario.simulation);
      return nlohmann::json{{"wall_s", r.wall_time_s}, {"iteration_s", r.iteration_time_s},
                            {"ops", r.compute_ops + r.comm_ops}}
          .dump();
    }, 3600);
    if (!child.ok) {
      state.SkipWithError(child.describe().c_str());
      return;
    }
    last = nlohmann::json::parse(child.output);
    state.SetIterationTime(last["wall_s"].get<double>());
  }
  state.counters["devices"] = 1024;
  state.counters["predicted_iteration_s"] = last["iteration_s"].get<double>();
  state.counters["ops_issued"] = last["ops"].get<double>();
  if (g_reference_s > 0) state.counters["vs_64_devices"] = last["wall_s"].get<double>() / g_reference_s;
}
BENCHMARK(BM_Hybrid3dIteration_Gpt3_175B_1024)->UseManualTime()->Iterations(1)->Unit(benchmark::kSecond);

}  // namespace

BENCHMARK_MAIN();
