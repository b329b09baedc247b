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
// BM_CpuTinyStep: the same on gpt-tiny (30 iterations after 5 of warm-up), where hand-offs
// between ranks' threads weigh as much as the kernels.
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

// gpt-tiny (2 layers, h = 64, vocab 256, 32 tokens): steps of a few milliseconds, where the
// hand-offs between ranks' threads weigh as much as the kernels.
std::shared_ptr<const Model> gpt_tiny() { return std::make_shared<TransformerModel>(transformer_preset("gpt-tiny")); }

using Shape = tandem::exec::cpu::testing::HybridShape;

double step_time_s(const Shape& s, bool tiny = false) {
  const auto model = tiny ? gpt_tiny() : gpt2_shaped();
  const std::int64_t seq = tiny ? 32 : 128;
  TrainingConfig training;
  training.seq_length = seq;
  const auto strategy = tandem::exec::cpu::testing::make_hybrid(model, s, training, 1'000'000);
  RunOptions o;
  configure_for_model(o, *model, seq);
  o.warmup_iterations = tiny ? 5 : 1;
  o.iterations = tiny ? 30 : 3;
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

void report(benchmark::State& state, const Shape& shape, bool tiny, double reference_s) {
  double total_s = 0;
  for (auto _ : state) {
    const double t = step_time_s(shape, tiny);
    state.SetIterationTime(t);
    total_s += t;
  }
  const double mean_s = total_s / static_cast<double>(state.iterations());
  state.counters["tokens_per_s"] = 8.0 * (tiny ? 32.0 : 128.0) / mean_s;
  state.counters["vs_single_rank"] = reference_s / mean_s;
}

void BM_CpuTrainingStep(benchmark::State& state, Shape shape) { report(state, shape, false, single_rank_time_s()); }

void BM_CpuTinyStep(benchmark::State& state, Shape shape) {
  static const double reference_s = step_time_s(Shape{}, true);
  report(state, shape, true, reference_s);
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
BENCHMARK_CAPTURE(BM_CpuTinyStep, single, Shape{})->UseManualTime()->Iterations(5)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_CpuTinyStep, tp2, Shape{.tp = 2})->UseManualTime()->Iterations(5)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_CpuTinyStep, pp2_1f1b, Shape{.pp = 2})->UseManualTime()->Iterations(5)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_CpuTinyStep, dp2_tp2, Shape{.tp = 2, .dp = 2})->UseManualTime()->Iterations(5)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_CpuTinyStep, tp2_pp2, Shape{.tp = 2, .pp = 2})->UseManualTime()->Iterations(5)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_CpuTinyStep, dp4, Shape{.dp = 4})->UseManualTime()->Iterations(5)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_CpuTinyStep, tp4, Shape{.tp = 4})->UseManualTime()->Iterations(5)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
