// A validation case: a scenario as it was published (model, cluster, training configuration,
// strategy) plus the figure published for it and exactly where. A case file is a scenario file
// with a `validation:` section:
//
//   validation:
//     published:
//       tflops_per_gpu: 137          # or iteration_time_s: 32.0
//       flops_formula: megatron_2021 # how the publication counted FLOPs (see FlopsFormula)
//     source: "Narayanan et al. 2021 (arXiv 2104.04473), Table 1, row 1.7B"
//     hardware: "Selene: DGX A100 80 GB, 8x HDR 200 Gb/s per node"
//     software: "Megatron-LM 6985e58, fp16, full recompute"
//     band_pct: 10                   # CI asserts |error| within this
//     ci: true                       # in the CI subset (small and fast enough)
//     note: "..."                    # assumptions made where the publication is silent
//
// The published figure is turned into an iteration time with the publication's own FLOP count,
// so that prediction and publication are compared on the one quantity the simulator predicts.
#pragma once

#include <string>
#include <vector>

#include "scenarios/scenario.hpp"

namespace tandem::validation {

// How a publication counted the FLOPs behind a per-GPU TFLOP/s figure.
enum class FlopsFormula {
  megatron_2021,  // Narayanan et al. 2021, appendix: 96·B·s·l·h²·(1 + s/6h + V/16lh), full recompute
  megatron_core,  // Megatron-Core's num_floating_point_operations (training.py, 2024): 3 passes,
                  // GQA and SwiGLU aware, no recompute: 12·B·s·l·h²·(attn + mlp + V/2lh)
  model,          // Tandem's model FLOPs: 6·N + 6·L·s·h per token (causal), no recompute
};
const char* to_string(FlopsFormula formula);

struct PublishedFigure {
  double tflops_per_gpu = 0;     // 0 when the publication gave an iteration time
  double iteration_time_s = 0;   // 0 when it gave TFLOP/s per GPU
  FlopsFormula formula = FlopsFormula::megatron_2021;
};

struct ValidationCase {
  Scenario scenario;
  PublishedFigure published;
  std::string source;
  std::string hardware;
  std::string software;
  std::string note;
  double band_pct = 10;
  bool ci = false;
  // Why this machine cannot simulate the case (scenario_limits.hpp: too many ranks, ops or bytes
  // for it), the refusal's one line; empty when it can. A refused case is reported, not run.
  std::string refused;

  std::string name() const { return scenario.name; }
  int devices() const;
  // The FLOPs of one iteration as the publication counts them.
  Flops published_flops_per_iteration() const;
  // The published iteration time: given, or the publication's FLOPs over its TFLOP/s × devices.
  Seconds published_iteration_time_s() const;
  // TFLOP/s per GPU of an iteration time, counted the publication's way.
  double tflops_per_gpu(Seconds iteration_time_s) const;
};

// A case whose simulation is estimated at more ops than this (scenarios/scenario_limits.hpp; at
// 10-20 us an op, several minutes on one core) is long: left out of a default run, which predicts
// the other cases in about a minute. Llama 3 405B on 8,192 and 16,384 GPUs, every rank simulated on
// Meta's oversubscribed fabric, are estimated at 1.1e8 each (the 8,192-GPU one took 46 minutes here).
inline constexpr double kQuickValidationOps = 2e7;

// Loads a case file (InputError with file, line and field on bad input, as scenarios do). A long
// case is refused (reported, not run) unless `include_long`.
ValidationCase load_validation_case(const std::string& path, bool include_long = false);

// The case files of a folder (*.yaml, sorted by name); the bundled validation/cases by default.
std::vector<std::string> validation_case_files(const std::string& dir = "");

}  // namespace tandem::validation
