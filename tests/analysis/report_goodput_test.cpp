// The report's goodput section (`tandem report --goodput`): one trial's timeline with each failure
// marked, the wall time by use and cause, the checkpoint-interval sweep with Young's and Daly's
// intervals; and the reader of `tandem goodput --json`, which names the field of a bad file.
#include <gtest/gtest.h>

#include <string>

#include "analysis/report/report.hpp"
#include "analysis/report/sections.hpp"
#include "common/input_error.hpp"
#include "tests/analysis/report_inputs_fixture.hpp"
#include "tests/analysis/temp_dir_test_base.hpp"

namespace tandem::report {
namespace {

int count_of(const std::string& text, const std::string& part) {
  int n = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

TEST(ReportGoodput, DrawsTheTimelineTheTimeByUseAndTheIntervalSweep) {
  ReportInputs in;
  in.goodput = analysis_test::week_of_goodput();
  const std::string section = goodput_section(in);
  ASSERT_FALSE(section.empty());
  EXPECT_EQ(count_of(section, "<svg class=\"plot"), 3);
  // Each of the trial's two failures is a marked event with its time; the sweep marks three intervals.
  EXPECT_EQ(count_of(section, "<title>failure "), 2);
  EXPECT_NE(section.find("failure 2 at 5.00 d"), std::string::npos);
  for (const char* mark : {"best of the sweep: 30.0 min", "Young: 29.2 min", "Daly: 28.3 min"})
    EXPECT_NE(section.find(mark), std::string::npos) << mark;
  // The time chart names every non-zero use and cause; the headline its interval.
  for (const char* part : {"gpu failures · lost work: 1.00 %", "gpu failures · restarts: 0.50 %",
                           "gpu failures · waiting: 0.50 %", "checkpoints", "shrunk (fewer devices)",
                           "95.00 %, trains at full speed", "95.00 % [94.00 %, 96.00 %]"})
    EXPECT_NE(section.find(part), std::string::npos) << part;
  EXPECT_EQ(section.find("slowed (stragglers)"), std::string::npos);  // no straggler time: not drawn
}

TEST(ReportGoodput, TheSectionFollowsTheInput) {
  ReportInputs none;
  none.search = analysis_test::full_report_inputs().search;
  EXPECT_TRUE(goodput_section(none).empty());
  ReportInputs only;
  only.goodput = analysis_test::week_of_goodput();
  const std::string html = render_report_html(only);
  EXPECT_NE(html.find("data-section=\"goodput\""), std::string::npos);
  EXPECT_NE(html.find("synthetic"), std::string::npos);  // the summary names the scenario
}

class ReportGoodputFiles : public analysis_test::TempDirTest {};

constexpr const char* kEstimate = R"({"scenario": "s", "devices": 8, "horizon_s": 1000, "trials": 4,
  "goodput": {"mean": 0.9, "ci95_low": 0.85, "ci95_high": 0.95},
  "effective_tokens_per_s": {"mean": 90, "ci95_low": 85, "ci95_high": 95},
  "failures_per_trial": {"mean": 1, "ci95_low": 0.5, "ci95_high": 1.5},
  "failure_free_tokens_per_s": 100,
  "time_s": {"useful": 900, "checkpoint": 10, "by_cause": {"gpu": {"lost_work": 50, "restart": 40, "waiting": 0}}},
  "timeline": [{"t_s": 0, "state": "running", "throughput": 1, "failures": 0},
               {"t_s": 500, "state": "restarting", "throughput": 0, "failures": 1},
               {"t_s": 540, "state": "running", "throughput": 1, "failures": 1}]})";

TEST_F(ReportGoodputFiles, ReadsTheEstimateTandemGoodputWrites) {
  const GoodputSummary g = read_goodput_json(write_text("g.json", kEstimate));
  EXPECT_EQ(g.scenario, "s");
  EXPECT_EQ(g.timeline.size(), 3u);
  EXPECT_EQ(g.timeline[1].failures, 1);
  EXPECT_DOUBLE_EQ(g.by_cause.at("gpu").restart_s, 40);
  EXPECT_DOUBLE_EQ(g.goodput.high, 0.95);
  EXPECT_FALSE(g.train_wall_s.has_value());
}

TEST_F(ReportGoodputFiles, AMalformedEstimateNamesTheFieldAndItsLine) {
  std::string backwards = kEstimate;
  backwards.replace(backwards.find("\"t_s\": 540"), 10, "\"t_s\": 400");
  const std::string path = write_text("g.json", backwards);
  try {
    read_goodput_json(path);
    FAIL() << "no InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), path);
    EXPECT_EQ(e.field(), "timeline[2].t_s");
    EXPECT_EQ(e.line(), 9);
  }
  std::string outside = kEstimate;
  outside.replace(outside.find("\"mean\": 0.9,"), 12, "\"mean\": 0.99,");
  try {
    read_goodput_json(write_text("h.json", outside));
    FAIL() << "no InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "goodput.mean");
  }
}

}  // namespace
}  // namespace tandem::report
