#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "analysis/trace.hpp"
#include "tests/analysis/temp_dir_test_base.hpp"
#include "tests/analysis/trace_builders.hpp"
#include "tests/cli/cli_test_support.hpp"

namespace tandem {
namespace {

using analysis_test::gemm;
using analysis_test::trace_of;
using cli_test::run_tandem;

class AnalysisCli : public analysis_test::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    predicted_ = path("p.trace.json");
    measured_ = path("m.trace.json");
    write_trace_json(trace_of("sim", {gemm(0, 0, "a", 0, 1), gemm(0, 0, "b", 1, 2)}), predicted_);
    write_trace_json(trace_of("cpu", {gemm(0, 0, "a", 3, 5), gemm(0, 0, "b", 5, 7)}), measured_);
  }
  std::string predicted_, measured_;
};

TEST_F(AnalysisCli, CompareReportsTheIterationErrorAsTextAndJson) {
  const auto run = run_tandem("compare " + predicted_ + " " + measured_ + " --json " + path("c.json"));
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_NE(run.out.find("error -50.0 %"), std::string::npos) << run.out;
  std::ifstream in(path("c.json"));
  const nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_DOUBLE_EQ(j["iteration_time"]["error"].get<double>(), -0.5);
}

TEST_F(AnalysisCli, CompareOfAMalformedTraceExitsWithStatus2NamingTheFile) {
  write_text("bad.json", R"({"schema": "tandem-trace/1", "records": [{"rank": "zero"}]})");
  const auto run = run_tandem("compare " + predicted_ + " " + path("bad.json"));
  EXPECT_EQ(run.status, 2);
  EXPECT_NE(run.err.find(path("bad.json")), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("records[0].rank"), std::string::npos) << run.err;
}

TEST_F(AnalysisCli, ReportWritesTheHtmlAndTheCombinedPerfettoTrace) {
  const auto run = run_tandem("report --predicted-trace " + predicted_ + " --measured-trace " + measured_ + " -o " +
                              path("r.html") + " --perfetto " + path("both.json"));
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_TRUE(std::filesystem::exists(path("r.html")));
  std::ifstream in(path("both.json"));
  EXPECT_TRUE(nlohmann::json::parse(in).contains("traceEvents"));
}

TEST_F(AnalysisCli, ReportWithoutInputExitsWithStatus2) {
  EXPECT_EQ(run_tandem("report -o " + path("r.html")).status, 2);
  EXPECT_FALSE(std::filesystem::exists(path("r.html")));
}

}  // namespace
}  // namespace tandem
