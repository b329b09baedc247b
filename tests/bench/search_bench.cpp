// Search benchmarks.
//
// 1. Whole searches, as `tandem search` runs them with 2 workers: the Llama-3-8B search on 32 H100
//    + 32 A100 (search-llama3-8b-mixed64) and the GPT-3 175B search over every knob and the nodes
//    used on 512 H100 + 512 A100 (search-gpt3-175b-mixed1024). Each prints its wall time, the
//    candidates simulated and ruled out, and, where the reference is affordable, the search that
//    simulates every valid candidate in the same run (`wall_ratio_vs_every`, `same_winner`).
//    The references are long (hours for the full spaces): they run with
//    TANDEM_SEARCH_BENCH_REFERENCE=1; the 175B one runs on a smaller space (one node selection,
//    fewer knobs) where it is.
// 2. Search throughput: candidates simulated per second by the search's evaluator (one forked
// worker process per candidate) for GPT-3 13B on the 256-GPU mixed cluster (platforms/clusters/
// mixed-256.yaml), with 1 and 2 workers. The same four 3D candidates each time (tensor 8 x
// pipeline 1/2/4/8, speed-proportional stages and batch shares), simulated as the bundled
// search-gpt3-13b-mixed scenario says (aggregated collectives). The 1-worker run is the
// reference: `speedup_vs_1_worker` is measured in the same process.
#include <benchmark/benchmark.h>

#include <sys/resource.h>

#include <chrono>
#include <cstdlib>
#include <functional>

#include "scenarios/search_evaluator.hpp"
#include "scenarios/search_spec.hpp"

namespace {

using namespace tandem;

constexpr int kSearchWorkers = 2;

struct TimedSearch {
  search::SearchResult result;
  double wall_s = 0;
  double cpu_s = 0;  // this process and its worker processes: what a loaded machine does not inflate
};

// CPU seconds (user + system) of this process and of its children waited for so far.
double cpu_seconds() {
  double total = 0;
  for (int who : {RUSAGE_SELF, RUSAGE_CHILDREN}) {
    rusage u{};
    getrusage(who, &u);
    total += static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
             1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
  }
  return total;
}

TimedSearch timed_search(const SearchScenario& spec, const search::SearchSettings& settings) {
  const auto start = std::chrono::steady_clock::now();
  const double cpu_start = cpu_seconds();
  const search::Enumeration space = search::enumerate(spec.space, spec.base.cluster, spec.base.training);
  SimulationEvaluator evaluator(spec.base, kSearchWorkers);
  TimedSearch t{search::run_search(space, evaluator, settings), 0, 0};
  t.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  t.cpu_s = cpu_seconds() - cpu_start;
  return t;
}

bool reference_wanted() {
  const char* v = std::getenv("TANDEM_SEARCH_BENCH_REFERENCE");
  return v != nullptr && std::string(v) == "1";
}

// One search as the CLI runs it (branch and bound), and, when wanted, the same space with every
// candidate simulated.
void search_benchmark(benchmark::State& state, const SearchScenario& spec, bool with_reference) {
  search::SearchSettings settings = spec.settings;
  settings.batch_size = std::max(settings.batch_size, 2 * kSearchWorkers);  // as the CLI does
  TimedSearch fast;
  for (auto _ : state) {
    fast = timed_search(spec, settings);
    state.SetIterationTime(fast.wall_s);
  }
  if (fast.result.ranked.empty()) return state.SkipWithError("no feasible strategy");
  state.counters["wall_s"] = fast.wall_s;
  state.counters["cpu_s"] = fast.cpu_s;
  state.counters["valid"] = static_cast<double>(fast.result.valid);
  state.counters["simulated"] = static_cast<double>(fast.result.evaluated);
  state.counters["pruned"] = static_cast<double>(fast.result.pruned_by_bound);
  state.counters["guided"] = fast.result.algorithm == search::Algorithm::guided ? 1 : 0;
  state.SetLabel("winner " + fast.result.ranked.front().candidate.key());
  if (!with_reference) return;
  search::SearchSettings every = settings;
  every.algorithm = search::Algorithm::exhaustive;
  every.prune = false;
  const TimedSearch full = timed_search(spec, every);
  if (full.result.ranked.empty()) return state.SkipWithError("reference: no feasible strategy");
  state.counters["reference_wall_s"] = full.wall_s;
  state.counters["reference_cpu_s"] = full.cpu_s;
  state.counters["reference_simulated"] = static_cast<double>(full.result.evaluated);
  state.counters["wall_ratio_vs_every"] = fast.wall_s / full.wall_s;
  state.counters["cpu_ratio_vs_every"] = fast.cpu_s / full.cpu_s;
  state.counters["same_winner"] = fast.result.ranked.front().candidate == full.result.ranked.front().candidate ? 1 : 0;
}

void BM_Search_Llama3_8B_Mixed64(benchmark::State& state) {
  search_benchmark(state, load_search_scenario("search-llama3-8b-mixed64"), reference_wanted());
}
BENCHMARK(BM_Search_Llama3_8B_Mixed64)->UseManualTime()->Iterations(1)->Unit(benchmark::kSecond);

void BM_Search_Gpt3_175B_Mixed1024(benchmark::State& state) {
  search_benchmark(state, load_search_scenario("search-gpt3-175b-mixed1024"), false);
}
BENCHMARK(BM_Search_Gpt3_175B_Mixed1024)->UseManualTime()->Iterations(1)->Unit(benchmark::kSecond);

// A space the reference can afford: all nodes, tensor 8, pipelines of 8 and 16, the rest free.
void BM_Search_Gpt3_175B_Mixed1024_Small(benchmark::State& state) {
  SearchScenario spec = load_search_scenario("search-gpt3-175b-mixed1024");
  spec.space.nodes = {{64, 64}};
  spec.space.tp = {8};
  spec.space.pp = {8, 16};
  spec.space.micro_batch_size = {1};
  spec.space.sequence_parallel = {1};
  spec.space.zero_stage = {1};
  spec.settings.algorithm = search::Algorithm::exhaustive;
  search_benchmark(state, spec, reference_wanted());
}
BENCHMARK(BM_Search_Gpt3_175B_Mixed1024_Small)->UseManualTime()->Iterations(1)->Unit(benchmark::kSecond);

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
