// A strategy's gradient_compression section: the names people know are read into the codec's
// configuration, a bare codec name takes the defaults, and every bad value (an unknown codec, a
// rank < 1, a top-k ratio outside (0, 1], compression with ZeRO) is one InputError naming the
// file, the line and the field.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "scenarios/scenario.hpp"
#include "scenarios/scenario_writer.hpp"

namespace tandem {
namespace {

namespace fs = std::filesystem;

// The compression lines start at line 11 (after `extra`, line 10).
std::string scenario_with(const std::string& compression_lines, const std::string& type = "data_parallel",
                          const std::string& extra = "  overlap_grad_reduce: true\n") {
  const fs::path dir = fs::temp_directory_path() / ("tandem-compression-test-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path path = dir / "scenario.yaml";
  std::ofstream(path) << "name: compressed\n"          // 1
                         "model: gpt2-124m\n"          // 2
                         "cluster: tiny-h100\n"        // 3
                         "training:\n"                 // 4
                         "  global_batch_size: 64\n"   // 5
                         "  micro_batch_size: 8\n"     // 6
                         "strategy:\n"                 // 7
                      << "  type: " << type << "\n"   // 8
                      << "  data_parallel_size: 8\n"  // 9
                      << extra                         // 10
                      << compression_lines;
  return path.string();
}

InputError load_error(const std::string& path) {
  try {
    const Scenario s = load_scenario(path);
    make_strategy(s);
  } catch (const InputError& e) {
    return e;
  }
  ADD_FAILURE() << "expected an InputError";
  return InputError("", 0, "", "");
}

TEST(GradientCompressionReader, PyTorchPowerSgdHookArgumentsAreRead) {
  const Scenario s = load_scenario(scenario_with("  gradient_compression:\n"
                                                 "    type: powerSGD\n"
                                                 "    matrix_approximation_rank: 4\n"
                                                 "    min_compression_rate: 1.5\n"
                                                 "    use_error_feedback: false\n"
                                                 "    random_seed: 7\n"));
  const CompressionConfig& c = s.parallel.gradient_compression;
  EXPECT_EQ(c.type, Compression::power_sgd);
  EXPECT_EQ(c.matrix_approximation_rank, 4);
  EXPECT_EQ(c.min_compression_rate, 1.5);
  EXPECT_FALSE(c.use_error_feedback);
  EXPECT_EQ(c.seed, 7u);
  EXPECT_NE(make_strategy(s)->name().find("powerSGD(r=4)"), std::string::npos);
}

TEST(GradientCompressionReader, ABareNameTakesTheDefaults) {
  const Scenario s = load_scenario(scenario_with("  gradient_compression: fp16_compress\n"));
  EXPECT_EQ(s.parallel.gradient_compression.type, Compression::fp16);
  EXPECT_EQ(load_scenario(scenario_with("  gradient_compression: {type: topk}\n")).parallel.gradient_compression.topk_ratio,
            0.01);
}

TEST(GradientCompressionReader, UnknownCodecNamesItsLineAndTheChoices) {
  const InputError e = load_error(scenario_with("  gradient_compression:\n    type: gzip\n"));
  EXPECT_EQ(e.line(), 12);
  EXPECT_EQ(e.field(), "strategy.gradient_compression.type");
  EXPECT_NE(std::string(e.what()).find("powerSGD"), std::string::npos);
}

TEST(GradientCompressionReader, RankBelowOneIsRefusedAtItsField) {
  for (const char* rank : {"0", "-2"}) {
    const InputError e = load_error(
        scenario_with(std::string("  gradient_compression:\n    type: powerSGD\n    matrix_approximation_rank: ") +
                      rank + "\n"));
    EXPECT_EQ(e.line(), 13) << rank;
    EXPECT_EQ(e.field(), "strategy.gradient_compression.matrix_approximation_rank") << rank;
  }
}

TEST(GradientCompressionReader, TopKRatioOutsideZeroToOneIsRefusedAtItsField) {
  for (const char* ratio : {"0", "1.5", "-0.1", ".nan"}) {
    const InputError e =
        load_error(scenario_with(std::string("  gradient_compression:\n    type: topk\n    topk_ratio: ") + ratio + "\n"));
    EXPECT_EQ(e.line(), 13) << ratio;
    EXPECT_EQ(e.field(), "strategy.gradient_compression.topk_ratio") << ratio;
  }
}

TEST(GradientCompressionReader, UnknownFieldZeroShardingAndTopKOverLargeBucketsAreRefused) {
  InputError e = load_error(scenario_with("  gradient_compression:\n    type: topk\n    ratio: 0.1\n"));
  EXPECT_EQ(e.line(), 13);
  EXPECT_EQ(e.field(), "strategy.gradient_compression.ratio");
  e = load_error(scenario_with("  gradient_compression: int8\n", "hybrid", "  zero_stage: 1\n"));
  EXPECT_EQ(e.field(), "strategy.gradient_compression");
  EXPECT_EQ(e.line(), 11);
  // Top-k's indices are 32-bit: a bucket of more parameters cannot be addressed.
  e = load_error(scenario_with("  gradient_compression: topk\n", "data_parallel", "  ddp_bucket_size: 4000000000\n"));
  EXPECT_EQ(e.field(), "strategy.ddp_bucket_size");
  EXPECT_EQ(e.line(), 10);
}

TEST(GradientCompressionReader, AWrittenScenarioKeepsItsCodec) {
  const Scenario s = load_scenario(scenario_with("  gradient_compression:\n"
                                                 "    type: topk\n"
                                                 "    topk_ratio: 0.037\n"
                                                 "    use_error_feedback: false\n"
                                                 "    random_seed: 9007199254740993\n"));
  const std::string path = (fs::temp_directory_path() /
                            ("tandem-compression-written-" + std::to_string(::getpid()) + ".yaml")).string();
  write_scenario(s, path);
  const CompressionConfig a = s.parallel.gradient_compression, b = load_scenario(path).parallel.gradient_compression;
  EXPECT_EQ(b.type, a.type);
  EXPECT_EQ(b.topk_ratio, a.topk_ratio);
  EXPECT_EQ(b.use_error_feedback, a.use_error_feedback);
  EXPECT_EQ(b.matrix_approximation_rank, a.matrix_approximation_rank);
  EXPECT_EQ(b.min_compression_rate, a.min_compression_rate);
  EXPECT_EQ(b.seed, a.seed);
}

}  // namespace
}  // namespace tandem
