// Sizes and counts that do not fit refuse with a message naming the quantity, instead of
// wrapping (undefined behaviour, and answers like a 2^62-token vocabulary fitting in 2.4 MB).

#include "common/checked_math.hpp"

#include <gtest/gtest.h>

#include <climits>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "exec/cpu/cpu_run.hpp"
#include "scenarios/scenario.hpp"
#include "sim/simulation.hpp"
#include "strategies/models/mlp.hpp"
#include "strategies/models/presets.hpp"
#include "strategies/models/transformer.hpp"

namespace tandem {
namespace {

constexpr std::int64_t kBig = std::int64_t{1} << 62;

// The std::overflow_error `call` throws, its message ("" when it throws none).
template <typename F>
std::string overflow_message(F&& call) {
  try {
    call();
  } catch (const std::overflow_error& e) {
    return e.what();
  }
  return "";
}

TEST(CheckedMath, ResultsThatFitAreExact) {
  EXPECT_EQ(checked_mul<std::int64_t>(3037000499, 3037000499, "x"), 9223372030926249001);
  EXPECT_EQ(checked_add<int>(INT_MAX - 1, 1, "x"), INT_MAX);
  EXPECT_EQ(checked_sum_of_products({{2, 3}, {4, 5, 6}, {7}}, "x"), 2 * 3 + 4 * 5 * 6 + 7);
}

TEST(CheckedMath, AnOverflowNamesTheQuantityAndItsOperands) {
  const std::string why = overflow_message([] { checked_mul<std::int64_t>(kBig, 4, "vocab_size x hidden_size"); });
  EXPECT_NE(why.find("vocab_size x hidden_size overflows"), std::string::npos) << why;
  EXPECT_NE(why.find("4611686018427387904 x 4"), std::string::npos) << why;
  EXPECT_NE(overflow_message([] { checked_add<int>(INT_MAX, 1, "iterations"); }).find("32-bit"), std::string::npos);
  EXPECT_NE(overflow_message([] { checked_sum_of_products({{kBig, 1}, {kBig, 1}}, "sum"); }), "");
}

TEST(CheckedMath, AHugeTransformerIsRefusedNotWrapped) {
  TransformerConfig cfg = transformer_preset("gpt2-124m");
  cfg.vocab_size = kBig;
  const std::string why = overflow_message([&] { parameter_count(cfg); });
  EXPECT_NE(why.find("transformer 'gpt2-124m'"), std::string::npos) << why;
  EXPECT_NE(why.find("vocab_size"), std::string::npos) << why;
  cfg = transformer_preset("gpt2-124m");
  cfg.num_layers = kBig;
  EXPECT_NE(overflow_message([&] { parameter_count(cfg); }).find("num_layers"), std::string::npos);
  cfg = transformer_preset("gpt2-124m");
  cfg.hidden_size = kBig;  // 4 x hidden_size for the MLP
  EXPECT_NE(overflow_message([&] { block_parameter_count(cfg); }), "");
}

TEST(CheckedMath, AHugeMlpAndTensorAreRefused) {
  MlpConfig mlp;
  mlp.name = "wide";
  mlp.input_size = kBig;
  mlp.hidden_sizes = {8};
  mlp.output_size = 2;
  EXPECT_NE(overflow_message([&] { parameter_count(mlp); }).find("mlp 'wide'"), std::string::npos);
  Tensor t;
  t.shape = {kBig, 2, 2};
  EXPECT_NE(overflow_message([&] { t.numel(); }).find("element count"), std::string::npos);
}

TEST(CheckedMath, WarmUpPlusIterationsBeyondIntRefusesToRun) {
  const Scenario s = load_scenario("gpt-tiny-localhost");
  auto strategy = make_strategy(s);
  auto model = make_model(s.model);
  exec::cpu::RunOptions options;
  exec::cpu::configure_for_model(options, *model, s.training.seq_length);
  options.warmup_iterations = INT_MAX;
  options.iterations = 1;
  EXPECT_NE(overflow_message([&] { exec::cpu::run_cpu(*strategy, options); }).find("warm-up + measured iterations"),
            std::string::npos);
}

TEST(CheckedMath, ANegativeWarmUpIsRefusedBeforeTheSimulationStarts) {
  const Scenario s = load_scenario("gpt-tiny-localhost");
  sim::SimulationOptions options;
  options.warmup_iterations = -2147483646;  // what 2147483650 read into an int becomes
  EXPECT_THROW(sim::simulate(*make_strategy(s), s.cluster, options), std::invalid_argument);
}

}  // namespace
}  // namespace tandem
