// gpt-tiny as the CPU training tests train it: a global batch of 8 sequences of 32 tokens in
// micro-batches of 2, AdamW at lr 1e-3; each test sets its own parallelism.
#pragma once

#include <memory>

#include "strategies/models/presets.hpp"
#include "strategies/models/transformer.hpp"

namespace tandem::exec::cpu::testing {

inline std::shared_ptr<const Model> gpt_tiny() {
  return std::make_shared<TransformerModel>(transformer_preset("gpt-tiny"));
}

inline TrainingConfig gpt_tiny_training(DType precision) {
  TrainingConfig training;
  training.global_batch_size = 8;
  training.micro_batch_size = 2;
  training.seq_length = 32;
  training.precision = precision;
  training.lr = 1e-3f;
  return training;
}

}  // namespace tandem::exec::cpu::testing
