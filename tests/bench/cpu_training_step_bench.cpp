// One training step of the CPU backend per parallel strategy, on a GPT-2-124M-shaped model
// scaled down to fit a CPU benchmark (GPT-2's proportions: 12 heads of 16, ffn = 4h, GELU,
// layer norm, learned positions, tied embeddings; 4 layers, h = 192, vocab 8192, 128 tokens per
// sequence, global batch 8 in micro-batches of 2, fp32, dropout on).
//
// The time is run_cpu's iteration time (the period between iteration ends), the mean of the
// measured iterations but the last, after one warm-up iteration: ranks that take turns on the
// cores (4 on 2) finish the last iteration alone, staggered, in a shorter period. Reported with
// manual timing. Counters:
//   tokens_per_s     global batch tokens / iteration time
//   vs_single_rank   the single-rank step's time / this step's time, both measured in this
//                    process (the single-rank reference runs first, once): > 1 means the
//                    strategy's ranks (threads, one BLAS thread each) finish the same global
//                    batch faster than one rank; the rest is communication and pipeline bubble.
#include <benchmark/benchmark.h>

#include <memory>

#include "exec/cpu/cpu_run.hpp"
#include "strategies/models/presets.hpp"
#include "strategies/models/transformer.hpp"
#include "tests/exec/cpu/hybrid_shape.hpp"

namespace {

using namespace tandem;
using namespace tandem::exec::cpu;

std::shared_ptr<const Model> gpt2_shaped() {
  return std::make_shared<TransformerModel>(
      gpt_config("gpt2-shaped-small", 4, 192, 12, /*seq=*/128, /*vocab=*/8192));
}

using Shape = tandem::exec::cpu::testing::HybridShape;

double step_time_s(const Shape& s) {
  TrainingConfig training;
  training.seq_length = 128;
  const auto strategy = tandem::exec::cpu::testing::make_hybrid(gpt2_shaped(), s, training, 1'000'000);
  RunOptions o;
  configure_for_model(o, *gpt2_shaped(), 128);
  o.warmup_iterations = 1;
  o.iterations = 3;
  o.record_trace = false;
  o.timeout_s = 120;
  const RunResult run = run_cpu(*strategy, o);
  double sum_s = 0;
  int counted = 0;
  for (std::size_t i = 0; i + 1 < run.iterations.size(); ++i) {
    if (run.iterations[i].warmup) continue;
    sum_s += run.iterations[i].time_s;
    ++counted;
  }
  return sum_s / counted;
}

double single_rank_time_s() {
  static const double t = step_time_s(Shape{});
  return t;
}

void BM_CpuTrainingStep(benchmark::State& state, Shape shape) {
  const double reference = single_rank_time_s();
  double total_s = 0;
  for (auto _ : state) {
    const double t = step_time_s(shape);
    state.SetIterationTime(t);
    total_s += t;
  }
  const double mean_s = total_s / static_cast<double>(state.iterations());
  state.counters["tokens_per_s"] = 8.0 * 128.0 / mean_s;
  state.counters["vs_single_rank"] = reference / mean_s;
}

BENCHMARK_CAPTURE(BM_CpuTrainingStep, single, Shape{})->UseManualTime()->Iterations(3)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_CpuTrainingStep, dp2, Shape{.dp = 2})->UseManualTime()->Iterations(3)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_CpuTrainingStep, tp2, Shape{.tp = 2})->UseManualTime()->Iterations(3)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_CpuTrainingStep, tp2_sp, Shape{.tp = 2, .sp = true})->UseManualTime()->Iterations(3)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_CpuTrainingStep, pp2_1f1b, Shape{.pp = 2})->UseManualTime()->Iterations(3)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_CpuTrainingStep, dp2_zero1, Shape{.dp = 2, .zero = 1})->UseManualTime()->Iterations(3)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_CpuTrainingStep, dp2_zero3, Shape{.dp = 2, .zero = 3})->UseManualTime()->Iterations(3)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_CpuTrainingStep, dp2_tp2, Shape{.tp = 2, .dp = 2})->UseManualTime()->Iterations(3)->Unit(benchmark::kMillisecond);
// Four ranks on a 2-core machine take turns on the cores (core_gate.hpp).
BENCHMARK_CAPTURE(BM_CpuTrainingStep, tp2_pp2, Shape{.tp = 2, .pp = 2})->UseManualTime()->Iterations(3)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_CpuTrainingStep, dp4, Shape{.dp = 4})->UseManualTime()->Iterations(3)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
