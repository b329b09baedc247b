#include "exec/cpu/data.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <thread>
#include <vector>

#include "common/usable_cores.hpp"
#include "strategies/models/mlp.hpp"
#include "strategies/models/transformer.hpp"

namespace tandem::exec::cpu {

namespace {
using I64 = std::int64_t;

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// A small deterministic generator for the corpus.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() { return splitmix64(state_ += 0x9E3779B97F4A7C15ull); }
  std::size_t pick(std::size_t n) { return static_cast<std::size_t>(next() % n); }

 private:
  std::uint64_t state_;
};

void write_int32(float* data, I64 i, std::int32_t value) {
  std::memcpy(data + i, &value, sizeof value);
}
}  // namespace

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

std::uint64_t hash_name(std::string_view name) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : name) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

float hashed_normal(std::uint64_t key, std::uint64_t index) {
  const std::uint64_t a = splitmix64(key ^ splitmix64(2 * index));
  const std::uint64_t b = splitmix64(key ^ splitmix64(2 * index + 1));
  // u1 in (0, 1], u2 in [0, 1): 53-bit uniforms.
  const double u1 = (static_cast<double>(a >> 11) + 1.0) * 0x1.0p-53;
  const double u2 = static_cast<double>(b >> 11) * 0x1.0p-53;
  return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
}

namespace {
// How a parameter starts, decided once per tensor from its name.
enum class InitKind { ones, zeros, normal };
InitKind init_kind(std::string_view name) {
  if (ends_with(name, "norm.weight")) return InitKind::ones;
  if (ends_with(name, ".bias")) return InitKind::zeros;
  return InitKind::normal;
}
// Initial value of element `index` of a logical parameter, given its kind and hashed key.
float initial_value(InitKind kind, std::uint64_t key, std::uint64_t index, float std_dev) {
  if (kind == InitKind::ones) return 1.0f;
  if (kind == InitKind::zeros) return 0.0f;
  return std_dev * hashed_normal(key, index);
}
std::string_view logical_name(std::string_view name) {
  // The last pipeline stage's copy of a tied word embedding is the same logical parameter as
  // the first stage's table (Megatron initialises the copy from it).
  return ends_with(name, "word_embedding_copy.weight") ? std::string_view("embedding.word.weight") : name;
}
// data[i] = value(i) for i in [0, n). A large tensor is filled by the process's usable cores: a
// GPT-2 1.5B's 1.6e9 parameters and their masters take minutes on one core (the normal draw is
// ~40 ns), which the GPU run spends before its first step. Each element depends on its index
// alone, so the values are the same on any number of threads.
template <typename Value>
void fill_by_index(float* data, I64 n, const Value& value) {
  constexpr I64 kElementsPerThread = I64{1} << 16;  // ~3 ms of normal draws: well past a thread's start
  const I64 threads = std::min<I64>(usable_cores(), n / kElementsPerThread);
  if (threads <= 1) {
    for (I64 i = 0; i < n; ++i) data[i] = value(i);
    return;
  }
  const I64 chunk = (n + threads - 1) / threads;
  // What a thread throws (a placement the part cannot hold) is thrown here, as the serial loop would.
  std::vector<std::exception_ptr> failed(static_cast<std::size_t>(threads));
  std::vector<std::thread> pool;
  for (I64 t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      try {
        for (I64 i = t * chunk; i < std::min(n, (t + 1) * chunk); ++i) data[i] = value(i);
      } catch (...) {
        failed[static_cast<std::size_t>(t)] = std::current_exception();
      }
    });
  for (std::thread& th : pool) th.join();
  for (const std::exception_ptr& e : failed)
    if (e) std::rethrow_exception(e);
}
}  // namespace

void init_parameter(std::string_view name, float* data, std::int64_t n, std::uint64_t seed,
                    float std_dev) {
  name = logical_name(name);
  const std::uint64_t key = splitmix64(seed) ^ hash_name(name);
  const InitKind kind = init_kind(name);
  fill_by_index(data, n, [&](I64 i) { return initial_value(kind, key, static_cast<std::uint64_t>(i), std_dev); });
}

void init_placed(const TensorPlacement& placement, std::string_view name, float* data, std::int64_t n,
                 std::uint64_t seed, float std_dev) {
  name = logical_name(name);
  const std::uint64_t key = splitmix64(seed) ^ hash_name(name);
  const InitKind kind = init_kind(name);
  fill_by_index(data, n, [&](I64 i) {
    const I64 g = placement.global_index(i);
    return g < 0 ? 0.0f : initial_value(kind, key, static_cast<std::uint64_t>(g), std_dev);
  });
}

bool init_placed_tensor(MemCategory category, const TensorPlacement& placement, float* data, std::int64_t n,
                        std::uint64_t seed, float std_dev) {
  constexpr std::string_view kMaster = ".master";
  if (category == MemCategory::parameters) {
    init_placed(placement, placement.name, data, n, seed, std_dev);
    return true;
  }
  if ((category == MemCategory::optimizer_state || category == MemCategory::host_optimizer_state) &&
      ends_with(placement.name, kMaster)) {
    const std::string_view param(placement.name.data(), placement.name.size() - kMaster.size());
    init_placed(placement, param, data, n, seed, std_dev);
    return true;
  }
  return false;
}

// ---------------------------------------------------------------- text corpus

std::string generate_corpus(std::uint64_t seed, std::size_t bytes) {
  static const char* subjects[] = {"the cat",     "a dog",        "my friend", "the old man",
                                   "the children", "our teacher", "she",       "he"};
  static const char* verbs[] = {"sees", "likes", "finds", "wants", "eats", "reads", "builds", "paints"};
  static const char* objects[] = {"the red ball", "a small house", "the big tree", "an apple",
                                  "the blue sky", "a good book",   "the river",    "some bread"};
  static const char* tails[] = {" today",  " every morning", " in the garden", " at night",
                                " with joy", " again",        "",                ""};
  Rng rng(seed);
  std::string text;
  text.reserve(bytes + 64);
  int in_line = 0;
  while (text.size() < bytes) {
    std::string sentence = subjects[rng.pick(8)];
    sentence += ' ';
    sentence += verbs[rng.pick(8)];
    sentence += ' ';
    sentence += objects[rng.pick(8)];
    sentence += tails[rng.pick(8)];
    sentence[0] = static_cast<char>(sentence[0] - 'a' + 'A');
    text += sentence;
    text += '.';
    text += ++in_line == 4 ? '\n' : ' ';
    if (in_line == 4) in_line = 0;
  }
  text.resize(bytes);
  return text;
}

TextCorpus::TextCorpus(std::int64_t vocab_size, std::uint64_t seed, std::size_t bytes)
    : vocab_(vocab_size), text_(generate_corpus(seed, bytes)) {
  if (vocab_ < 1) throw std::invalid_argument("TextCorpus: vocab_size must be >= 1");
}

TextCorpus::TextCorpus(std::int64_t vocab_size, std::string text) : vocab_(vocab_size), text_(std::move(text)) {
  if (vocab_ < 1) throw std::invalid_argument("TextCorpus: vocab_size must be >= 1");
  if (text_.empty()) throw std::invalid_argument("TextCorpus: the text is empty");
}

bool TextCorpus::fill(std::string_view role, const Tensor& t, float* data,
                      const DataPosition& at) const {
  if (role != "tokens" && role != "labels") return false;
  if (t.shape.size() != 2)
    throw std::logic_error("TextCorpus: '" + std::string(role) + "' must be [batch, seq]");
  const I64 b = t.shape[0], s = at.segments.empty() ? t.shape[1] : at.seq_length;
  const I64 length = static_cast<I64>(text_.size());
  if (s + 1 >= length) throw std::logic_error("TextCorpus: sequence longer than the corpus");
  const I64 shift = role == "labels" ? 1 : 0;
  // Position in the sequence of the tensor's column i (its segments, in order).
  std::vector<I64> position;
  for (const auto& [first, count] : at.segments)
    for (I64 i = 0; i < count; ++i) position.push_back(first + i);
  if (!position.empty() && static_cast<I64>(position.size()) != t.shape[1])
    throw std::logic_error("TextCorpus: the segments do not cover the tensor's columns");
  for (I64 row = 0; row < b; ++row) {
    const I64 q = static_cast<I64>(at.iteration) * at.sequences_per_iteration +
                  at.micro_batch * b + row;
    const I64 offset = (q * 7919) % (length - s - 1);
    for (I64 i = 0; i < t.shape[1]; ++i) {
      const I64 at_i = position.empty() ? i : position[static_cast<std::size_t>(i)];
      const auto byte = static_cast<unsigned char>(text_[static_cast<std::size_t>(offset + at_i + shift)]);
      const auto token = static_cast<std::int32_t>(byte % vocab_);
      if (t.dtype == DType::int32) write_int32(data, row * t.shape[1] + i, token);
      else data[row * t.shape[1] + i] = static_cast<float>(token);
    }
  }
  return true;
}

// ---------------------------------------------------------------- teacher classification

TeacherClassification::TeacherClassification(std::int64_t input_size, std::int64_t classes,
                                             std::uint64_t seed)
    : input_size_(input_size), classes_(classes), seed_(seed) {
  if (input_size < 1 || classes < 1)
    throw std::invalid_argument("TeacherClassification: sizes must be >= 1");
  teacher_.resize(static_cast<std::size_t>(classes * input_size));
  const std::uint64_t key = splitmix64(seed ^ hash_name("teacher"));
  for (std::size_t i = 0; i < teacher_.size(); ++i) teacher_[i] = hashed_normal(key, i);
}

float TeacherClassification::feature(std::int64_t sequence, std::int64_t j) const {
  const std::uint64_t key = splitmix64(seed_ ^ hash_name("features"));
  return hashed_normal(key, static_cast<std::uint64_t>(sequence * input_size_ + j));
}

std::int64_t TeacherClassification::label(std::int64_t sequence) const {
  std::int64_t best = 0;
  double best_score = -1e300;
  for (I64 c = 0; c < classes_; ++c) {
    double score = 0;
    for (I64 j = 0; j < input_size_; ++j)
      score += static_cast<double>(teacher_[static_cast<std::size_t>(c * input_size_ + j)]) *
               feature(sequence, j);
    if (score > best_score) {
      best_score = score;
      best = c;
    }
  }
  return best;
}

bool TeacherClassification::fill(std::string_view role, const Tensor& t, float* data,
                                 const DataPosition& at) const {
  if (role != "features" && role != "labels") return false;
  if (t.shape.empty()) throw std::logic_error("TeacherClassification: scalar data tensor");
  const I64 b = t.shape[0];
  for (I64 row = 0; row < b; ++row) {
    const I64 q = static_cast<I64>(at.iteration) * at.sequences_per_iteration +
                  at.micro_batch * b + row;
    if (role == "features") {
      if (t.numel() != b * input_size_)
        throw std::logic_error("TeacherClassification: features must be [batch, input_size]");
      for (I64 j = 0; j < input_size_; ++j) data[row * input_size_ + j] = feature(q, j);
    } else {
      const auto c = static_cast<std::int32_t>(label(q));
      if (t.dtype == DType::int32) write_int32(data, row, c);
      else data[row] = static_cast<float>(c);
    }
  }
  return true;
}

std::shared_ptr<const DataSource> make_data_source(const Model& model, std::uint64_t seed) {
  if (const auto* t = dynamic_cast<const TransformerModel*>(&model))
    return std::make_shared<TextCorpus>(t->config().vocab_size, seed);
  if (const auto* m = dynamic_cast<const MlpModel*>(&model))
    return std::make_shared<TeacherClassification>(m->config().input_size,
                                                   m->config().output_size, seed);
  throw std::invalid_argument("no training data for model '" + model.describe().name + "'");
}

}  // namespace tandem::exec::cpu
