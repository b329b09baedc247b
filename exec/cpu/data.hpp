// Training data and deterministic initial values for the CPU backend.
//
// THE DATA CONTRACT. Models ask for their data by allocating activations with reserved names
// (strategies/models): "mb{k}.tokens" (transformer input: token ids [b, s] int32),
// "mb{k}.labels" (next-token targets [b, s] int32 for the transformer, class ids [b] int32 for
// the MLP) and "mb{k}.features" (MLP input [b, input_size]). The CPU device recognises these
// names at alloc() and fills the tensor from the run's DataSource instead of zero-filling it.
// Whatever rank allocates the tensor (every rank of a data-parallel replica's tensor-parallel
// group, the first pipeline stage for tokens, the last for labels) gets the same values, since a
// DataSource is a pure function of the tensor's position in the global batch:
//   sequence q = iteration · sequences_per_iteration + global_micro_batch · b + row,
// where global_micro_batch = the rank's micro-batch offset + k (data-parallel replica r runs the
// global micro-batches offset_r .. offset_r + count_r − 1; see cpu_run.hpp). So a step sees the
// same global batch whatever the data-parallel degree, which is what makes runs with different
// strategies comparable number for number.
//
// Sources:
//   TextCorpus           byte-level language modelling (vocab 256; token = byte mod vocab) on a
//                        real text given to it (run --corpus FILE), or by default on a
//                        generated English-like text (a small grammar driven by a seeded
//                        generator: learnable structure, ~0.3 nats/byte of true entropy, so the
//                        loss falls far below ln 256 = 5.55). Sequence q reads the corpus from
//                        offset (q · 7919) mod (length − s − 1): tokens = bytes [o, o+s),
//                        labels = bytes [o+1, o+s+1).
//   TeacherClassification  MLP data: features ~ N(0, 1) from a counter-based hash of (seed, q,
//                        feature); the label is the argmax of a fixed random linear "teacher"
//                        W[c][j] ~ N(0, 1) applied to the features (learnable, separable).
//
// Parameter initialisation: a parameter named "...norm.weight" starts at 1, "....bias" at 0
// (norm biases included), every other one ~ N(0, std²) drawn from a counter-based hash of
// (seed, logical parameter name, GLOBAL element index); the last pipeline stage's copy of a
// tied word embedding ("...word_embedding_copy.weight") draws as "embedding.word.weight". The
// model places every parameter in its logical tensor (TensorPlacement: tensor-parallel shards,
// ZeRO partitions), so every strategy starts from the same global weights, element for element.
// Padding (a vocabulary padded to a multiple of tp) starts at 0.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "strategies/model.hpp"
#include "strategies/tensor.hpp"

namespace tandem::exec::cpu {

// Where a data tensor sits in the global batch.
struct DataPosition {
  int iteration = 0;
  std::int64_t micro_batch = 0;  // global micro-batch index within the iteration
  std::int64_t sequences_per_iteration = 1;
  // Context parallelism: the tensor holds these {first position, length} ranges of sequences
  // seq_length long, concatenated (TensorPlacement::segments); empty: the whole sequence.
  std::vector<std::pair<std::int64_t, std::int64_t>> segments;
  std::int64_t seq_length = 0;
};

class DataSource {
 public:
  virtual ~DataSource() = default;
  // Fills `data` (t.numel() floats of storage; int32 tensors get raw int32 values) when `role`
  // ("tokens", "labels", "features") is one this source provides; returns false otherwise.
  virtual bool fill(std::string_view role, const Tensor& t, float* data,
                    const DataPosition& at) const = 0;
};

class TextCorpus final : public DataSource {
 public:
  TextCorpus(std::int64_t vocab_size, std::uint64_t seed, std::size_t bytes = 1 << 16);
  // A given text (a file's bytes); std::invalid_argument when it is empty.
  TextCorpus(std::int64_t vocab_size, std::string text);
  bool fill(std::string_view role, const Tensor& t, float* data,
            const DataPosition& at) const override;
  const std::string& text() const { return text_; }

 private:
  std::int64_t vocab_;
  std::string text_;
};

class TeacherClassification final : public DataSource {
 public:
  TeacherClassification(std::int64_t input_size, std::int64_t classes, std::uint64_t seed);
  bool fill(std::string_view role, const Tensor& t, float* data,
            const DataPosition& at) const override;

 private:
  float feature(std::int64_t sequence, std::int64_t j) const;
  std::int64_t label(std::int64_t sequence) const;
  std::int64_t input_size_, classes_;
  std::uint64_t seed_;
  std::vector<float> teacher_;  // [classes, input_size]
};

// The English-like text TextCorpus trains on (deterministic in `seed`).
std::string generate_corpus(std::uint64_t seed, std::size_t bytes);

// The source for a model of the project (TransformerModel: TextCorpus; MlpModel:
// TeacherClassification). Throws std::invalid_argument for other models.
std::shared_ptr<const DataSource> make_data_source(const Model& model, std::uint64_t seed);

// ---- deterministic values ----
std::uint64_t splitmix64(std::uint64_t x);
std::uint64_t hash_name(std::string_view name);  // FNV-1a 64
// N(0, 1) from a counter: deterministic in (key, index).
float hashed_normal(std::uint64_t key, std::uint64_t index);
// Initial values of parameter `name` (n elements, the whole logical tensor) into data.
void init_parameter(std::string_view name, float* data, std::int64_t n, std::uint64_t seed,
                    float std_dev);
// Initial values of the n elements of a tensor placed at `placement` in logical parameter
// `name` (placement.name, or the parameter a ".master" copy belongs to).
void init_placed(const TensorPlacement& placement, std::string_view name, float* data, std::int64_t n,
                 std::uint64_t seed, float std_dev);
// What Runtime::place() sets, on every backend with real memory (the CUDA backend computes it
// on the host and copies it over): a parameter (category parameters) becomes its part of the
// logical tensor, an fp32 master copy (optimizer_state, placement "<param>.master") the same
// part of its parameter's initial value, as mixed-precision frameworks copy the parameters into
// the masters at setup. Returns false, leaving `data` alone, for any other tensor.
bool init_placed_tensor(MemCategory category, const TensorPlacement& placement, float* data, std::int64_t n,
                        std::uint64_t seed, float std_dev);

// What every real backend's devices need to train the same model the same way (the CUDA
// backend's settings extend it too).
struct TrainingSettings {
  std::uint64_t seed = 1234;     // parameters, dropout
  float init_std = 0.02f;        // N(0, std²) for weights
  float hidden_dropout = 0.0f;   // kernels::cpu::RunOptions: set from the model config
  float attention_dropout = 0.0f;
  std::shared_ptr<const DataSource> data;  // null: data tensors stay zero
  std::int64_t sequences_per_iteration = 1;
  bool record_trace = true;
};

}  // namespace tandem::exec::cpu
