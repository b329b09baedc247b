// The validation suite (validation/): every case loads with its source, the published figures are
// consistent with the FLOP counts they were computed with, and the CI subset is predicted within
// each case's band. The whole table (every case, mean and max |error|) is `tandem validate`.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/platforms/platform_test_support.hpp"
#include "validation/validation_run.hpp"

namespace tandem::validation {
namespace {

std::vector<ValidationCase> all_cases() {
  std::vector<ValidationCase> cases;
  for (const auto& file : validation_case_files()) cases.push_back(load_validation_case(file));
  return cases;
}

const ValidationCase& find(const std::vector<ValidationCase>& cases, const std::string& name) {
  for (const auto& c : cases) {
    if (c.name() == name) return c;
  }
  throw std::runtime_error("no case " + name);
}

TEST(Validation, EveryCaseLoadsWithItsSourceAndAPublishedFigure) {
  const auto cases = all_cases();
  EXPECT_GE(cases.size(), 31u);
  for (const auto& c : cases) {
    EXPECT_FALSE(c.source.empty()) << c.name();
    EXPECT_GT(c.published_iteration_time_s(), 0) << c.name();
    EXPECT_LE(c.devices(), c.scenario.cluster.device_count()) << c.name();
  }
}

// The publications give both a time and a TFLOP/s figure in a few places: the FLOP formulas
// turn one into the other as the authors did.
TEST(Validation, PublishedTimesAndTflopsAgreeThroughThePublishedFlopCount) {
  const auto cases = all_cases();
  // Megatron-LM README: "each iteration takes around 32 seconds resulting in 138 teraFLOPs per GPU".
  EXPECT_NEAR(find(cases, "megatron-readme-gpt3-175b-1024").published_iteration_time_s(), 32.0, 32.0 * 0.02);
  // MT-NLG sec. 2.4: 60.1 s per iteration on 2240 GPUs, 126 TFLOP/s per GPU (with the SC'21 count).
  const ValidationCase& mtnlg = find(cases, "mtnlg-530b-2240");
  EXPECT_NEAR(mtnlg.tflops_per_gpu(mtnlg.published_iteration_time_s()), 126, 126 * 0.02);
  // Megatron-LM README H100 table: 1.7B at 408.8 TF/GPU is 41% of 989 (its MFU column).
  const ValidationCase& h100 = find(cases, "megatron-core-h100-1.7b");
  EXPECT_NEAR(h100.tflops_per_gpu(h100.published_iteration_time_s()) / 989, 0.41, 0.005);
}

// A case whose simulation is estimated above kQuickValidationOps is left out of a default run,
// saying how to run it, and loads as any other with include_long (validate --long). One rank of a
// 128-layer model through 4,096 micro-batches: ~2e7 ops, no other limit near.
TEST(Validation, ALongCaseIsLeftOutOfTheDefaultRunAndSaysHowToRunIt) {
  test::TempDir dir;
  const std::string file = dir.write("long.yaml",
                                     "name: long\n"
                                     "model: { num_layers: 128, hidden_size: 1024, num_attention_heads: 16,\n"
                                     "         vocab_size: 51200, seq_length: 1024 }\n"
                                     "cluster: tiny-h100\n"
                                     "training: { global_batch_size: 4096, micro_batch_size: 1, seq_length: 1024 }\n"
                                     "strategy: { type: hybrid, data_parallel_size: 1 }\n"
                                     "validation:\n"
                                     "  published: { iteration_time_s: 100 }\n"
                                     "  source: a test\n");
  const ValidationCase by_default = load_validation_case(file);
  EXPECT_NE(by_default.refused.find("validate --long"), std::string::npos) << by_default.refused;
  EXPECT_TRUE(load_validation_case(file, /*include_long=*/true).refused.empty());
}

TEST(Validation, ErrorsAreSummarisedPerDeviceKind) {
  // What a GPU profile's basis line quotes: the suite's error over the cases run on that kind.
  auto result = [](const std::string& kind, double published_s, double predicted_s, bool ok = true) {
    CaseResult r;
    r.name = kind + "-" + std::to_string(predicted_s);
    r.device_kind = kind;
    r.ok = ok;
    r.published_s = published_s;
    r.predicted_s = predicted_s;
    return r;
  };
  const auto kinds = summarize_by_device({result("H100-SXM", 10, 9), result("A100-SXM-80GB", 10, 8),
                                          result("A100-SXM-80GB", 10, 11), result("A100-SXM-80GB", 10, 0, false)});
  ASSERT_EQ(kinds.size(), 2u);
  EXPECT_EQ(kinds[0].first, "A100-SXM-80GB");
  EXPECT_EQ(kinds[0].second.cases, 3);
  EXPECT_EQ(kinds[0].second.failed, 1);
  EXPECT_NEAR(kinds[0].second.mean_abs_error, 0.15, 1e-12);  // the failed case counts in neither
  EXPECT_NEAR(kinds[0].second.mean_error, -0.05, 1e-12);     // -20% and +10%: too fast on average
  EXPECT_NEAR(kinds[0].second.max_abs_error, 0.20, 1e-12);
  EXPECT_EQ(kinds[1].first, "H100-SXM");
  EXPECT_NEAR(kinds[1].second.mean_abs_error, 0.10, 1e-12);
  EXPECT_NEAR(kinds[1].second.mean_error, -0.10, 1e-12);
}

TEST(Validation, TheCiSubsetIsPredictedWithinEachCasesBand) {
  std::vector<ValidationCase> ci;
  for (auto& c : all_cases()) {
    if (c.ci) ci.push_back(std::move(c));
  }
  ASSERT_FALSE(ci.empty());
  const auto results = run_cases(ci, 2);
  for (const auto& r : results) {
    ASSERT_TRUE(r.ok) << r.name << ": " << r.failure;
    EXPECT_TRUE(r.within_band()) << r.name << ": predicted " << r.predicted_s << " s, published " << r.published_s
                                 << " s (" << 100 * r.error() << "%, band " << r.band_pct << "%)";
    EXPECT_FALSE(r.out_of_memory) << r.name << " ran as published, so it fits";
  }
  std::cout << format_table(results);
}

}  // namespace
}  // namespace tandem::validation
