// Training-step throughput of the CUDA backend on one GPU: GPT-2 124M and GPT-2 1.5B (the
// scenarios gpt2-124m-h200 and gpt2-1.5b-h200, bf16 math), 2 warm-up steps then 3 measured.
// Counters: tokens_per_s, step_s, mfu = model FLOPs per token (6N + attention) × tokens/s / the
// device's bf16 peak (the scenario cluster's device profile), peak_reserved_gib. The reference
// in the same session is PyTorch eager on the same model and batch (tests/gpu/pytorch_reference.py,
// run by tests/gpu/check.sh, which prints the side-by-side ratio). Skipped without a GPU.
#include <benchmark/benchmark.h>

#include "exec/cuda/cuda_run.hpp"
#include "scenarios/scenario.hpp"

namespace {

void BM_CudaTrainingStep(benchmark::State& state, const char* scenario_name) {
  using namespace tandem;
  if (exec::cuda::cuda_device_count() < 1) {
    state.SkipWithError("no CUDA device");
    return;
  }
  Scenario scenario = load_scenario(scenario_name);
  auto strategy = make_strategy(scenario);
  auto model = make_model(scenario.model);
  exec::cpu::RunOptions o;
  exec::cpu::configure_for_model(o, *model, scenario.training.seq_length);
  o.iterations = 3;
  o.warmup_iterations = 2;
  o.record_trace = false;
  exec::cuda::CudaRunExtras extras;
  extras.math = kernels::cuda::MathMode::bf16;
  exec::cpu::RunResult result;
  for (auto _ : state) {
    result = exec::cuda::run_cuda(*strategy, o, extras);
    state.SetIterationTime(result.iteration_time_s);
  }
  const double peak_flops = scenario.cluster.device_of(0).peak_flops_per_s(DType::bf16);
  state.counters["tokens_per_s"] = result.tokens_per_s;
  state.counters["step_s"] = result.iteration_time_s;
  state.counters["mfu"] = model->describe().model_flops_per_token * result.tokens_per_s / peak_flops;
  state.counters["peak_reserved_gib"] = static_cast<double>(extras.peak_reserved_bytes) / (1u << 30);
  state.counters["loss"] = result.iterations.back().loss;
}
BENCHMARK_CAPTURE(BM_CudaTrainingStep, gpt2_124m, "gpt2-124m-h200")->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_CudaTrainingStep, gpt2_1_5b, "gpt2-1.5b-h200")->UseManualTime()->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
