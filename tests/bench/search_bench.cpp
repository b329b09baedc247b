// Search throughput: candidates simulated per second by the search's evaluator (one forked
// worker process per candidate) for GPT-3 13B on the 256-GPU mixed cluster (platforms/clusters/
// mixed-256.yaml), with 1 and 2 workers. The same four 3D candidates each time (tensor 8 x
// pipeline 1/2/4/8, speed-proportional stages and batch shares), simulated as the bundled
// search-gpt3-13b-mixed scenario says (aggregated collectives). The 1-worker run is the
// reference: `speedup_vs_1_worker` is measured in the same process.
#include <benchmark/benchmark.h>

#include <chrono>

#include "scenarios/search_evaluator.hpp"
#include "scenarios/search_spec.hpp"

namespace {

using namespace tandem;

double g_one_worker_per_s = 0;

std::vector<search::Candidate> candidates() {
  std::vector<search::Candidate> out;
  for (int pp : {1, 2, 4, 8}) {
    search::Candidate c;
    c.tp = 8, c.pp = pp, c.dp = 256 / (8 * pp), c.zero_stage = 1;
    c.partition = HybridConfig::Partition::proportional;
    c.batch_split = BatchSplit::proportional;
    out.push_back(c);
  }
  return out;
}

void BM_SearchThroughput_Gpt3_13B_Mixed256(benchmark::State& state) {
  const int workers = static_cast<int>(state.range(0));
  Scenario base = load_search_scenario("search-gpt3-13b-mixed").base;
  base.cluster = find_cluster("mixed-256");
  const auto batch = candidates();
  std::size_t simulated = 0;
  double seconds = 0;
  for (auto _ : state) {
    SimulationEvaluator evaluator(base, workers);
    const auto start = std::chrono::steady_clock::now();
    const auto results = evaluator.evaluate(batch);
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    for (const auto& r : results)
      if (!r.ok) {
        state.SkipWithError(r.error.c_str());
        return;
      }
    state.SetIterationTime(elapsed);
    simulated += results.size();
    seconds += elapsed;
  }
  const double per_s = static_cast<double>(simulated) / seconds;
  if (workers == 1) g_one_worker_per_s = per_s;
  state.counters["workers"] = workers;
  state.counters["candidates_per_s"] = per_s;
  if (g_one_worker_per_s > 0) state.counters["speedup_vs_1_worker"] = per_s / g_one_worker_per_s;
}
BENCHMARK(BM_SearchThroughput_Gpt3_13B_Mixed256)->Arg(1)->Arg(2)->UseManualTime()->Iterations(1)->Unit(benchmark::kSecond);

}  // namespace

BENCHMARK_MAIN();
