// How fast the simulator is at cluster scale (issue 13): wall time and memory of one simulated
// iteration of the jobs in tests/bench/scale/ (64 to 16,384 GPUs) with the default coarsenings,
// and, on smaller members of the same families, how far those coarsenings are from the exact
// form (--replica-folding off --tensor-folding off --compute-fidelity per_op --fidelity exact)
// and how much faster they are, measured in the same run:
//
//   BM_Scale/<case>            wall_s, rss_gb, predicted_iteration_s, simulated_ranks, ops_issued
//   BM_Agreement/<member>      iteration_error (coarse vs exact, relative), rank_error (worst
//                              per-rank compute/exposed/idle difference over the iteration),
//                              exact_over_coarse (wall time ratio)
//
// Each simulation runs in a forked child (one SimGrid engine per process).
//   build/scale_bench                                  # everything (minutes)
//   build/scale_bench --benchmark_filter=BM_Agreement  # the agreement table only
#include <benchmark/benchmark.h>

#include <string>

#include "scenarios/scenario.hpp"
#include "tests/sim/sim_outcome.hpp"

namespace {

using namespace tandem;

std::string case_path(const std::string& name) { return bundled_dir("tests/bench/scale") + "/" + name + ".yaml"; }

sim_test::Outcome simulate_scenario(const Scenario& s, const sim::SimulationOptions& options) {
  return sim_test::simulate_outcome(s.cluster, options, [&s](const Cluster&) { return make_strategy(s); }, 3600);
}

void report(benchmark::State& state, const sim_test::Outcome& o) {
  state.counters["wall_s"] = o.wall_s;
  state.counters["rss_gb"] = o.rss_bytes / 1e9;
  state.counters["predicted_iteration_s"] = o.iteration_s;
  state.counters["simulated_ranks"] = o.simulated_ranks;
  state.counters["ops_issued"] = o.ops;
}

// ---- the jobs, default coarsenings ----

void BM_Scale(benchmark::State& state, const std::string& name) {
  const Scenario s = load_scenario(case_path(name));
  sim_test::Outcome o;
  for (auto _ : state) {
    o = simulate_scenario(s, s.simulation);
    state.SetIterationTime(o.wall_s);
  }
  report(state, o);
  state.SetLabel(o.folding);
}

// ---- smaller members: coarse against exact ----

sim::SimulationOptions exact_options() {
  sim::SimulationOptions o;
  o.replica_folding = sim::ReplicaFolding::off;
  o.tensor_folding = sim::FoldingMode::off;
  o.pipeline_extrapolation = sim::FoldingMode::off;
  o.compute_fidelity = sim::ComputeFidelity::per_op;
  o.collective_fidelity = sim::CollectiveFidelity::exact;
  return o;
}

// `name` with `layers` transformer layers, `micro_batches` per replica, `pp` stages, `dp` replicas
// (on `cluster` instead of its own, when given).
Scenario member(const std::string& name, int layers, int micro_batches, int pp, int dp,
                const std::string& cluster = "") {
  Scenario s = load_scenario(case_path(name));
  if (!cluster.empty()) s.cluster = find_cluster(cluster);
  s.model.transformer.num_layers = layers;
  s.parallel.pipeline_model_parallel_size = pp;
  s.parallel.data_parallel_size = dp;
  s.training.global_batch_size = static_cast<std::int64_t>(micro_batches) * dp * s.training.micro_batch_size;
  return s;
}

void BM_Agreement(benchmark::State& state, const std::string& name, int layers, int micro_batches, int pp,
                  int dp, const std::string& cluster = "") {
  const Scenario s = member(name, layers, micro_batches, pp, dp, cluster);
  sim_test::Outcome coarse, exact;
  for (auto _ : state) {
    coarse = simulate_scenario(s, sim::SimulationOptions{});
    exact = simulate_scenario(s, exact_options());
    state.SetIterationTime(coarse.wall_s);
  }
  double rank_error = 0;
  for (std::size_t r = 0; r < exact.compute_s.size(); ++r) {
    rank_error = std::max({rank_error, std::abs(coarse.compute_s[r] - exact.compute_s[r]),
                           std::abs(coarse.exposed_s[r] - exact.exposed_s[r]), std::abs(coarse.idle_s[r] - exact.idle_s[r])});
  }
  report(state, coarse);
  state.counters["iteration_error"] = (coarse.iteration_s - exact.iteration_s) / exact.iteration_s;
  state.counters["rank_error"] = rank_error / exact.iteration_s;
  state.counters["exact_over_coarse"] = exact.wall_s / coarse.wall_s;
  state.counters["exact_wall_s"] = exact.wall_s;
  state.SetLabel(coarse.folding);
}

// Issue 13's table: the files of tests/bench/scale/.
const char* const kJobs[] = {"gpt-175b-t8p8-interleaved-64", "gpt-530b-t8p35-full", "gpt-530b-t8p35-sp",
                             "gpt-1t-t8p64-full",            "gpt-1t-t8p64-sp",     "llama3-405b-t8p16d128",
                             "gpt-175b-mixed-16k",           "gpt-1t-t8p64d32-16k"};

// Members of the families, growing: the error should not grow with size.
struct Member {
  const char* label;
  const char* job;
  int layers, micro_batches, pp, dp;
  const char* cluster;  // "" for the job's own
};
const Member kMembers[] = {
    {"gpt_175b_interleaved_l16_mb8_p4", "gpt-175b-t8p8-interleaved-64", 16, 8, 4, 1, ""},
    {"gpt_175b_interleaved_l32_mb16_p8", "gpt-175b-t8p8-interleaved-64", 32, 16, 8, 1, ""},
    {"gpt_175b_interleaved_l16_mb32_p4", "gpt-175b-t8p8-interleaved-64", 16, 32, 4, 1, ""},
    {"gpt_530b_full_l8_mb16_p4", "gpt-530b-t8p35-full", 8, 16, 4, 1, ""},
    {"gpt_530b_sp_l8_mb16_p4", "gpt-530b-t8p35-sp", 8, 16, 4, 1, ""},
    {"gpt_1t_sp_l8_mb16_p8", "gpt-1t-t8p64-sp", 8, 16, 8, 1, ""},
    {"gpt_1t_sp_l16_mb32_p16", "gpt-1t-t8p64-sp", 16, 32, 16, 1, ""},
    {"gpt_1t_sp_l16_mb64_p16", "gpt-1t-t8p64-sp", 16, 64, 16, 1, ""},
    {"gpt_1t_zero1_l8_mb8_p8_d4", "gpt-1t-t8p64d32-16k", 8, 8, 8, 4, ""},
    // H100 and A100 stages (the bundled 'mixed' cluster's first 128 GPUs), proportional shares.
    {"gpt_175b_mixed_l8_mb8_p2_d8", "gpt-175b-mixed-16k", 8, 8, 2, 8, "mixed"},
};

const bool kRegistered = [] {
  for (const char* job : kJobs)
    benchmark::RegisterBenchmark((std::string("BM_Scale/") + job).c_str(), BM_Scale, std::string(job))
        ->UseManualTime()->Iterations(1)->Unit(benchmark::kSecond);
  for (const Member& m : kMembers)
    benchmark::RegisterBenchmark((std::string("BM_Agreement/") + m.label).c_str(), BM_Agreement, std::string(m.job),
                                 m.layers, m.micro_batches, m.pp, m.dp, std::string(m.cluster))
        ->UseManualTime()->Iterations(1)->Unit(benchmark::kSecond);
  return true;
}();

}  // namespace

BENCHMARK_MAIN();
