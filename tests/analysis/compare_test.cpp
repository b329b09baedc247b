#include "analysis/compare.hpp"

#include <gtest/gtest.h>

#include <functional>

#include "common/input_error.hpp"
#include "tests/analysis/temp_dir_test_base.hpp"
#include "tests/analysis/trace_builders.hpp"

namespace tandem {
namespace {

using analysis_test::all_reduce;
using analysis_test::gemm;
using analysis_test::op;
using analysis_test::trace_of;

// Predicted: gemm a 1 s, all-reduce b 2 s, one rank, iteration 0 (clock from 0).
// Measured: the same ops, a 2 s and b 4 s, its clock starting at 10 s.
Trace predicted_pair() { return trace_of("sim", {gemm(0, 0, "a", 0, 1), all_reduce(0, 0, "b", 1, 3)}); }
Trace measured_pair() { return trace_of("cpu", {gemm(0, 0, "a", 10, 12), all_reduce(0, 0, "b", 12, 16)}); }

TEST(Compare, IterationTimeErrorIsSignedAndRelativeToTheMeasurement) {
  const Comparison c = compare_traces(predicted_pair(), measured_pair());
  EXPECT_EQ(c.alignment, IterationAlignment::by_iteration);
  EXPECT_DOUBLE_EQ(c.predicted.iteration_time_s, 3);
  EXPECT_DOUBLE_EQ(c.measured.iteration_time_s, 6);
  ASSERT_TRUE(c.iteration_time_error);
  EXPECT_DOUBLE_EQ(*c.iteration_time_error, -0.5);
  // Over-prediction is positive.
  const Comparison reversed = compare_traces(measured_pair(), predicted_pair());
  EXPECT_DOUBLE_EQ(*reversed.iteration_time_error, 1.0);
}

TEST(Compare, TotalsPerKindRankAndStreamCoverMatchedOps) {
  const Comparison c = compare_traces(predicted_pair(), measured_pair());
  EXPECT_EQ(c.matched_ops, 2);
  EXPECT_DOUBLE_EQ(c.by_kind.at(OpKind::gemm).predicted_s, 1);
  EXPECT_DOUBLE_EQ(c.by_kind.at(OpKind::gemm).measured_s, 2);
  EXPECT_DOUBLE_EQ(*c.by_kind.at(OpKind::gemm).error(), -0.5);
  EXPECT_DOUBLE_EQ(c.by_kind.at(OpKind::all_reduce).difference_s(), -2);
  EXPECT_DOUBLE_EQ(c.by_stream.at(Stream::dp_comm).measured_s, 4);
  EXPECT_DOUBLE_EQ(c.by_rank.at(0).predicted_s, 3);
  EXPECT_DOUBLE_EQ(c.by_rank.at(0).measured_s, 6);
  EXPECT_DOUBLE_EQ(c.matched.predicted_s, 3);
}

TEST(Compare, TotalsArePerIterationWhenIterationsAreMatchedOneByOne) {
  const Trace predicted = trace_of("sim", {gemm(0, 0, "a", 0, 1), gemm(0, 1, "a", 1, 2)});
  const Trace measured = trace_of("cpu", {gemm(0, 0, "a", 0, 2), gemm(0, 1, "a", 2, 6)});
  const Comparison c = compare_traces(predicted, measured);
  EXPECT_EQ(c.alignment, IterationAlignment::by_iteration);
  EXPECT_EQ(c.aligned_iterations, 2);
  EXPECT_EQ(c.matched_ops, 2);
  EXPECT_DOUBLE_EQ(c.by_kind.at(OpKind::gemm).predicted_s, 1);
  EXPECT_DOUBLE_EQ(c.by_kind.at(OpKind::gemm).measured_s, 3);
  EXPECT_DOUBLE_EQ(c.measured.iteration_time_s, 3);
}

TEST(Compare, IterationTimeIsThePeriodBetweenIterationEndsWhenRanksOverlapIterations) {
  // Two ranks taking turns: rank 1 starts each iteration while rank 0 finishes the previous one.
  // Spans are 0-4, 2-7, 5-10 (mean 4.67); iterations end every 3 s after the first.
  const Trace measured = trace_of("cpu", {gemm(0, 0, "a", 0, 3), gemm(1, 0, "a", 1, 4), gemm(0, 1, "a", 2, 7),
                                          gemm(1, 1, "a", 4, 6), gemm(0, 2, "a", 5, 9), gemm(1, 2, "a", 7, 10)});
  const Comparison c = compare_traces(measured, measured);
  EXPECT_DOUBLE_EQ(c.measured.iteration_time_s, 10.0 / 3);  // (last end - first start) / 3
}

TEST(Compare, OneIterationAgainstSeveralIsComparedWithTheMeanIteration) {
  const Trace predicted = trace_of("sim", {gemm(0, 0, "a", 0, 1), gemm(0, 0, "b", 1, 2)});
  // Three measured iterations: a lasts 2, 4, 6 s; b 1 s each.
  Trace measured = trace_of("cpu", {});
  Seconds t = 100;
  for (int it = 0; it < 3; ++it) {
    measured.records.push_back(gemm(0, it, "a", t, t + 2 * (it + 1)));
    t += 2 * (it + 1);
    measured.records.push_back(gemm(0, it, "b", t, t + 1));
    t += 1;
  }
  const Comparison c = compare_traces(predicted, measured);
  EXPECT_EQ(c.alignment, IterationAlignment::mean_iteration);
  EXPECT_EQ(c.matched_ops, 2);
  EXPECT_DOUBLE_EQ(c.measured.iteration_time_s, 5);  // (3 + 5 + 7) / 3
  EXPECT_EQ(c.measured.iterations.size(), 3u);
  EXPECT_DOUBLE_EQ(c.by_kind.at(OpKind::gemm).measured_s, 5);  // a 4 + b 1
  EXPECT_DOUBLE_EQ(*c.iteration_time_error, (2.0 - 5.0) / 5.0);
}

TEST(Compare, MeasuredWarmupIterationsAreLeftOut) {
  const Trace predicted = trace_of("sim", {gemm(0, 0, "a", 0, 1)});
  const Trace measured = trace_of("cpu", {gemm(0, 0, "a", 0, 9), gemm(0, 1, "a", 9, 11), gemm(0, 2, "a", 11, 13)});
  CompareOptions options;
  options.measured_warmup_iterations = 1;
  const Comparison c = compare_traces(predicted, measured, options);
  EXPECT_DOUBLE_EQ(c.measured.iteration_time_s, 2);
  ASSERT_EQ(c.measured.iterations.size(), 2u);
  EXPECT_EQ(c.measured.iterations.front().iteration, 1);
}

TEST(Compare, UnmatchedOpsAreCountedListedAndKeptOutOfTheTotals) {
  Trace predicted = predicted_pair();
  predicted.records.push_back(gemm(0, 0, "only_predicted", 3, 4));
  Trace measured = measured_pair();
  measured.records.push_back(gemm(1, 0, "a", 10, 11));  // same op id, another rank: not the same op
  const Comparison c = compare_traces(predicted, measured);
  EXPECT_EQ(c.matched_ops, 2);
  ASSERT_EQ(c.predicted_only.size(), 1u);
  EXPECT_EQ(c.predicted_only[0].key.op_id, "only_predicted");
  EXPECT_DOUBLE_EQ(c.predicted_only[0].duration_s, 1);
  ASSERT_EQ(c.measured_only.size(), 1u);
  EXPECT_EQ(c.measured_only[0].key.rank, 1);
  EXPECT_DOUBLE_EQ(c.matched.predicted_s, 3);
  const nlohmann::json j = to_json(c);
  EXPECT_EQ(j["unmatched"]["predicted_only_count"], 1);
  EXPECT_EQ(j["unmatched"]["measured_only"][0]["op_id"], "a");
  EXPECT_NE(to_text(c).find("only_predicted"), std::string::npos);
}

TEST(Compare, RepeatedOpIdsAreMatchedInOrderNotMerged) {
  const Trace predicted = trace_of("sim", {gemm(0, 0, "x", 0, 1), gemm(0, 0, "x", 1, 3)});
  const Trace measured = trace_of("cpu", {gemm(0, 0, "x", 0, 2), gemm(0, 0, "x", 2, 3)});
  CompareOptions options;
  options.largest_differences = 1;
  const Comparison c = compare_traces(predicted, measured, options);
  EXPECT_EQ(c.matched_ops, 2);
  ASSERT_EQ(c.largest_differences.size(), 1u);
  // x: 1 s vs 2 s; x#2: 2 s vs 1 s. Equal |difference|: the first occurrence comes first.
  EXPECT_EQ(c.largest_differences[0].key.display(), "x");
  EXPECT_DOUBLE_EQ(c.largest_differences[0].difference_s(), -1);
}

TEST(Compare, LargestDifferencesComeFirstByAbsoluteValue) {
  const Trace predicted = trace_of("sim", {gemm(0, 0, "small", 0, 1), gemm(0, 0, "big", 1, 2), gemm(0, 0, "mid", 2, 10)});
  const Trace measured = trace_of("cpu", {gemm(0, 0, "small", 0, 1.5), gemm(0, 0, "big", 1.5, 11.5), gemm(0, 0, "mid", 11.5, 14.5)});
  CompareOptions options;
  options.largest_differences = 2;
  const Comparison c = compare_traces(predicted, measured, options);
  ASSERT_EQ(c.largest_differences.size(), 2u);
  EXPECT_EQ(c.largest_differences[0].key.op_id, "big");
  EXPECT_DOUBLE_EQ(c.largest_differences[0].difference_s(), -9);
  EXPECT_EQ(c.largest_differences[1].key.op_id, "mid");
  EXPECT_DOUBLE_EQ(c.largest_differences[1].difference_s(), 5);
}

TEST(Compare, ErrorIsNullInJsonWhenNothingWasMeasured) {
  const Comparison c = compare_traces(trace_of("sim", {gemm(0, 0, "a", 0, 1)}), trace_of("cpu", {gemm(0, 0, "a", 5, 5)}));
  EXPECT_FALSE(c.iteration_time_error);
  const nlohmann::json j = to_json(c);
  EXPECT_TRUE(j["iteration_time"]["error"].is_null());
  EXPECT_TRUE(j["by_kind"][0]["error"].is_null());
}

class CompareFiles : public analysis_test::TempDirTest {
 protected:
  std::string write(const std::string& name, const Trace& trace) {
    write_trace_json(trace, path(name));
    return path(name);
  }
};

void expect_input_error(const std::function<void()>& call, const std::string& file, const std::string& field) {
  try {
    call();
    ADD_FAILURE() << "no InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), file);
    EXPECT_EQ(e.field(), field) << e.what();
  }
}

TEST_F(CompareFiles, ReadsBothTracesAndNamesThem) {
  const std::string p = write("p.json", predicted_pair()), m = write("m.json", measured_pair());
  const Comparison c = compare_trace_files(p, m);
  EXPECT_EQ(c.predicted.file, p);
  EXPECT_EQ(c.measured.file, m);
  EXPECT_DOUBLE_EQ(*c.iteration_time_error, -0.5);
}

TEST_F(CompareFiles, AMalformedRecordIsAnInputErrorNamingFileAndField) {
  const std::string p = write("p.json", predicted_pair());
  const std::string m = write_text("m.json", R"({"schema": "tandem-trace/1", "records": [{"rank": 0}]})");
  expect_input_error([&] { compare_trace_files(p, m); }, m, "records[0].iteration");
}

TEST_F(CompareFiles, TracesOfDifferentScenariosAreComparedWithAWarning) {
  Trace other = measured_pair();
  other.scenario = "another";
  const std::string p = write("p.json", predicted_pair()), m = write("m.json", other);
  const Comparison c = compare_trace_files(p, m);
  EXPECT_GT(c.matched_ops, 0);
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_NE(c.warnings[0].find("'another'"), std::string::npos) << c.warnings[0];
  EXPECT_NE(to_text(c).find("warning"), std::string::npos);
  EXPECT_EQ(to_json(c)["warnings"].size(), 1u);
}

TEST_F(CompareFiles, TracesOfOneScenarioCarryNoWarning) {
  const std::string p = write("p.json", predicted_pair()), m = write("m.json", measured_pair());
  EXPECT_TRUE(compare_trace_files(p, m).warnings.empty());
}

TEST_F(CompareFiles, TracesWithNoOpInCommonAreRefused) {
  const std::string p = write("p.json", predicted_pair());
  const std::string m = write("m.json", trace_of("cpu", {gemm(0, 0, "unrelated", 0, 1)}));
  expect_input_error([&] { compare_trace_files(p, m); }, m, "records");
}

TEST_F(CompareFiles, AnEmptyTraceIsRefused) {
  const std::string p = write("p.json", trace_of("sim", {})), m = write("m.json", measured_pair());
  expect_input_error([&] { compare_trace_files(p, m); }, p, "records");
}

TEST_F(CompareFiles, AWarmupAsLongAsTheRunIsRefused) {
  const std::string p = write("p.json", predicted_pair()), m = write("m.json", measured_pair());
  CompareOptions options;
  options.measured_warmup_iterations = 1;
  expect_input_error([&] { compare_trace_files(p, m, options); }, m, "records");
}

}  // namespace
}  // namespace tandem
