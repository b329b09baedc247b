// The loss of each of `steps` iterations of a strategy trained for real on the CPU backend (no
// trace, a 30 s timeout): what the training tests compare between runs and settings.
#pragma once

#include <cstdint>
#include <vector>

#include "exec/cpu/cpu_run.hpp"

namespace tandem::exec::cpu::testing {

inline std::vector<double> train_losses(const Strategy& strategy, const Model& model, int steps,
                                        std::int64_t seq_length) {
  RunOptions o;
  o.iterations = steps;
  configure_for_model(o, model, seq_length);
  o.record_trace = false;
  o.timeout_s = 30;
  std::vector<double> losses;
  for (const auto& it : run_cpu(strategy, o).iterations) losses.push_back(it.loss);
  return losses;
}

}  // namespace tandem::exec::cpu::testing
