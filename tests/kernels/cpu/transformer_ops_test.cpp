// The whole op stream of a small transformer (strategies/models/transformer.cpp, tp = 1) run
// through the CPU kernel dispatcher on a minimal eager runtime, and its parameter gradients
// checked against central finite differences of the loss. This holds the model's op
// conventions (which tensors each op gets, in which layout, what is accumulated or
// overwritten, how the loss is reduced) and the kernels' conventions to each other: a
// mismatch anywhere shows up as a wrong gradient.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <string>

#include "kernels/cpu/dispatch.hpp"
#include "strategies/models/presets.hpp"
#include "strategies/models/transformer.hpp"
#include "tests/kernels/cpu/kernel_test_support.hpp"

namespace tandem::kernels::cpu {
namespace {

using I64 = std::int64_t;

// Executes every compute op at once on the host; fp32 storage per the dispatcher's contract.
class EagerRuntime final : public Runtime {
 public:
  explicit EagerRuntime(RunOptions options) : options_(std::move(options)) {}
  int rank() const override { return 0; }
  int world_size() const override { return 1; }
  Tensor alloc(std::string_view name, std::vector<std::int64_t> shape, DType dtype,
               MemCategory) override {
    Tensor t{next_id_++, std::move(shape), dtype};
    mem_[t.id].assign(static_cast<std::size_t>(t.numel()), 0.0f);
    names_[t.id] = std::string(name);
    if (name.size() >= 7 && name.substr(name.size() - 7) == ".labels") {
      // Deterministic targets in [0, 37), stored as raw int32.
      for (I64 i = 0; i < t.numel(); ++i) {
        const std::int32_t label = static_cast<std::int32_t>((i * 7 + 3) % 37);
        std::memcpy(&mem_[t.id][static_cast<std::size_t>(i)], &label, 4);
      }
    }
    return t;
  }
  void release(const Tensor& t) override { mem_.erase(t.id); }
  void reacquire(const Tensor& t, MemCategory) override {
    mem_[t.id].assign(static_cast<std::size_t>(t.numel()), 0.0f);
  }
  Handle compute(ComputeOp op, const Issue&) override {
    run(op, [this](const Tensor& t) { return mem_.at(t.id).data(); }, options_);
    return Handle{};
  }
  Handle communicate(CommOp op, const Issue&) override {
    throw std::logic_error("eager test runtime: unexpected communication " + op.label);
  }
  void wait(Handle) override {}
  Handle record(Stream) override { return Handle{}; }
  void synchronize() override {}
  void begin_iteration(int) override {}
  void end_iteration() override {}

  std::vector<float>& at(const Tensor& t) { return mem_.at(t.id); }
  const std::string& name(const Tensor& t) const { return names_.at(t.id); }

 private:
  RunOptions options_;
  std::int32_t next_id_ = 0;
  std::map<std::int32_t, std::vector<float>> mem_;
  std::map<std::int32_t, std::string> names_;
};

struct ModelCase {
  TransformerConfig cfg;
  Recompute recompute = Recompute::none;
};

TransformerConfig gpt_config() {
  TransformerConfig c = tandem::gpt_config("tiny-gpt", 2, 16, 4, /*seq=*/6, /*vocab=*/37);
  c.ffn_hidden_size = 32;
  c.max_position_embeddings = 8;  // more rows than the sequence
  return c;
}

TransformerConfig llama_config() {
  TransformerConfig c = gpt_config();
  c.name = "tiny-llama";
  c.num_query_groups = 2;  // GQA
  c.norm = NormType::rmsnorm;
  c.activation = ActivationType::swiglu;
  c.position = PositionEmbeddingType::rope;
  c.tied_embeddings = false;
  c.bias = false;
  c.use_flash_attn = true;
  c.hidden_dropout = 0.0;
  c.attention_dropout = 0.0;
  return c;
}

// One forward (and, with `grads`, backward) of micro-batch 0. `params` holds every parameter's
// values in layer order; empty means "initialise deterministically and return them there".
double run_model(const ModelCase& s, std::vector<std::vector<float>>& params,
                 std::vector<std::vector<float>>* grads) {
  RunOptions opt;
  opt.seed = 2024;
  opt.hidden_dropout = static_cast<float>(s.cfg.hidden_dropout);
  opt.attention_dropout = static_cast<float>(s.cfg.attention_dropout);
  EagerRuntime rt(opt);
  TransformerModel model(s.cfg);
  BatchShape batch;
  batch.micro_batch = 2;
  batch.seq_len = s.cfg.seq_length;
  batch.dtype = batch.param_dtype = batch.grad_dtype = DType::fp32;
  ParallelContext ctx;
  ctx.recompute = s.recompute;
  auto layers = model.build_layers(batch, ctx);
  for (auto& l : layers) l->allocate(rt, /*with_gradients=*/true);
  const bool init = params.empty();
  std::size_t index = 0;
  for (auto& l : layers)
    for (const Tensor& p : l->parameters()) {
      auto& v = rt.at(p);
      if (init) {
        v = testing::random_vector(v.size(), 1000 + static_cast<std::uint32_t>(index), -0.3f, 0.3f);
        if (rt.name(p).find("norm.weight") != std::string::npos)
          for (auto& x : v) x += 1.0f;
        params.push_back(v);
      } else {
        v = params.at(index);
      }
      ++index;
    }
  Tensor x = model.make_input(rt, batch, 0);
  for (I64 i = 0; i < x.numel(); ++i) {
    const std::int32_t id = static_cast<std::int32_t>((i * 11 + 5) % s.cfg.vocab_size);
    std::memcpy(&rt.at(x)[static_cast<std::size_t>(i)], &id, 4);
  }
  for (auto& l : layers) x = l->forward(rt, x, 0);
  const double loss = rt.at(x)[0];
  rt.release(x);
  if (grads) {
    Tensor g;
    for (auto it = layers.rbegin(); it != layers.rend(); ++it) g = (*it)->backward(rt, g, 0);
    grads->clear();
    for (auto& l : layers)
      for (const Tensor& t : l->gradients()) grads->push_back(rt.at(t));
  }
  return loss;
}

// Loss and gradients at the initial point; FD on a spread of elements of every parameter.
void check_gradients(const ModelCase& s, double tolerance) {
  std::vector<std::vector<float>> params, grads;
  const double loss = run_model(s, params, &grads);
  EXPECT_TRUE(std::isfinite(loss));
  EXPECT_NEAR(loss, std::log(37.0), 1.0);  // near-uniform predictions at init
  ASSERT_EQ(params.size(), grads.size());
  double worst = 0.0, scale = 0.0;
  std::vector<std::pair<double, double>> pairs;  // (analytic, fd)
  for (std::size_t p = 0; p < params.size(); ++p) {
    const std::size_t n = params[p].size();
    for (std::size_t k = 0; k < 5; ++k) {
      const std::size_t j = (k * 2654435761u + p * 97) % n;
      const float x0 = params[p][j];
      const float h = 1e-2f;
      params[p][j] = x0 + h;
      const double lp = run_model(s, params, nullptr);
      params[p][j] = x0 - h;
      const double lm = run_model(s, params, nullptr);
      params[p][j] = x0;
      const double fd = (lp - lm) / (static_cast<double>(x0 + h) - static_cast<double>(x0 - h));
      pairs.emplace_back(grads[p][j], fd);
      scale = std::max(scale, std::abs(fd));
    }
  }
  for (const auto& [a, fd] : pairs) worst = std::max(worst, std::abs(a - fd));
  ::testing::Test::RecordProperty("fd_model", std::to_string(worst / scale));
  EXPECT_LT(worst / scale, tolerance) << "max |grad − fd| " << worst << " over max |fd| " << scale;
}

TEST(TransformerOpsTest, GptGradientsMatchFiniteDifferences) {
  check_gradients(ModelCase{gpt_config()}, 2e-3);
}

TEST(TransformerOpsTest, LlamaGradientsMatchFiniteDifferences) {
  check_gradients(ModelCase{llama_config()}, 2e-3);
}

// Recomputation redraws the same dropout masks (same label stem), so full and selective
// recompute give the gradients of no recompute; and fused ("flash") attention gives those of
// the unfused kernel, dropout included.
TEST(TransformerOpsTest, RecomputeAndFlashGiveTheSameGradients) {
  std::vector<std::vector<float>> params, base;
  const double loss = run_model(ModelCase{gpt_config()}, params, &base);
  auto same = [&](const ModelCase& s, const char* what) {
    std::vector<std::vector<float>> grads;
    EXPECT_NEAR(run_model(s, params, &grads), loss, 1e-6) << what;
    ASSERT_EQ(grads.size(), base.size());
    for (std::size_t i = 0; i < grads.size(); ++i)
      EXPECT_LT(testing::rel_error(grads[i], base[i]), 1e-5) << what << " parameter " << i;
  };
  same(ModelCase{gpt_config(), Recompute::full}, "full recompute");
  same(ModelCase{gpt_config(), Recompute::selective}, "selective recompute");
  TransformerConfig flash = gpt_config();
  flash.use_flash_attn = true;
  same(ModelCase{flash}, "flash attention");
}

}  // namespace
}  // namespace tandem::kernels::cpu
