// The report's plan and timelines without a browser: the plan read from a trace's ranks (stages,
// layers, batch shares per device group), in words; lanes grouped by device group and stage;
// a colour per op kind, none shared; rank roles surviving the trace file.
#include <gtest/gtest.h>

#include <set>

#include "analysis/report/op_colours.hpp"
#include "analysis/report/plan.hpp"
#include "analysis/report/timeline.hpp"
#include "tests/analysis/report_inputs_fixture.hpp"
#include "tests/analysis/temp_dir_test_base.hpp"

namespace tandem::report {
namespace {

TEST(ReportPlan, ReadsStagesLayersAndBatchSharesPerDeviceGroupFromTheRanks) {
  const ReportInputs in = analysis_test::heterogeneous_report_inputs(64, false);
  const PlanSummary plan = plan_summary(in.predicted_trace->ranks);
  EXPECT_EQ(plan.ranks, 64);
  EXPECT_EQ(plan.stages, 2);
  EXPECT_EQ(plan.replicas, 32);
  EXPECT_EQ(plan.sequences, 16 * 12 + 16 * 4);
  EXPECT_EQ(plan.layers_of_stage, (std::vector<int>{18, 14}));
  ASSERT_EQ(plan.groups.size(), 2u);
  const PlanGroup& h100 = plan.groups[0];
  EXPECT_EQ(h100.group, "h100");
  EXPECT_EQ(h100.ranks, 32);
  EXPECT_EQ(h100.first_node, 0);
  EXPECT_EQ(h100.last_node, 3);
  EXPECT_EQ(h100.stages, (std::vector<int>{0, 1}));
  EXPECT_EQ(h100.replicas.size(), 16u);
  EXPECT_DOUBLE_EQ(h100.batch_share, 0.75);
  EXPECT_DOUBLE_EQ(plan.groups[1].batch_share, 0.25);

  const std::string words = plan_in_words(plan);
  for (const char* part : {"64 devices in 2 device groups", "2 pipeline stages (layers per stage: 18 | 14)",
                           "32 data-parallel replicas", "take 12 each, 75.0 % of the batch", "take 4 each, 25.0 %"})
    EXPECT_NE(words.find(part), std::string::npos) << part << " not in: " << words;
}

TEST(ReportPlan, SaysNothingOfAPlanWithoutRanksOrSearchResults) {
  ReportInputs in = analysis_test::full_report_inputs();
  in.search.reset();
  in.prediction.reset();
  EXPECT_EQ(plan_section(in), "");
  EXPECT_EQ(plan_in_words(plan_summary({})), "");
}

TEST(ReportPlan, ExplainsTheHeterogeneityGainAndTheRunnersUp) {
  const std::string section = plan_section(analysis_test::heterogeneous_report_inputs(16, false));
  EXPECT_NE(section.find("beats the best uniform one by 46.7 %"), std::string::npos);
  // #2 differs from the winner most in exposed communication (+5 ms vs +4 ms compute, +1 ms idle).
  const std::size_t second = section.find("#2 (tp=2 pp=1 dp=32 batch=proportional) is ");
  ASSERT_NE(second, std::string::npos) << section;
  EXPECT_EQ(section.find("slower, mostly exposed communication", second), section.find("slower", second)) << section;
  EXPECT_NE(section.find("Collectives per device group"), std::string::npos);
}

TEST(ReportTimeline, GroupsLanesByDeviceGroupAndStage) {
  const ReportInputs in = analysis_test::heterogeneous_report_inputs(16, false);
  std::vector<int> all(16);
  for (int r = 0; r < 16; ++r) all[r] = r;
  const std::vector<LaneGroup> groups = lane_groups(in.predicted_trace->ranks, all);
  ASSERT_EQ(groups.size(), 4u);  // (h100, a100) x (stage 0, stage 1)
  EXPECT_EQ(groups[0].group, "h100");
  EXPECT_EQ(groups[0].stage, 0);
  EXPECT_EQ(groups[0].ranks, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(groups[3].group, "a100");
  EXPECT_EQ(groups[3].stage, 1);
  EXPECT_EQ(groups[3].ranks, (std::vector<int>{12, 13, 14, 15}));
  // Without ranks: one group of every rank.
  EXPECT_EQ(lane_groups({}, all).size(), 1u);
}

TEST(ReportTimeline, DrawsOneLaneGroupPerDeviceGroupAndStageOnOneAxis) {
  ReportInputs in = analysis_test::heterogeneous_report_inputs(4096, false);
  const std::string html = timelines_html({{"predicted", *in.predicted_trace}}, in.predicted_trace->ranks);
  std::size_t groups = 0, lanes = 0;
  for (std::size_t at = html.find("class=\"tl-group\""); at != std::string::npos; at = html.find("class=\"tl-group\"", at + 1))
    ++groups;
  for (std::size_t at = html.find("tl-lanes\""); at != std::string::npos; at = html.find("tl-lanes\"", at + 1)) ++lanes;
  EXPECT_EQ(groups, 4u);
  EXPECT_EQ(lanes, 4u * 4);  // each group's first rank and 3 behind its toggle
  EXPECT_LT(html.size(), 4u << 20) << "the page stays small at 4,096 ranks";
  EXPECT_EQ(html.find("data-span-us=\"0"), std::string::npos);
}

TEST(ReportColours, EveryOpKindHasItsOwnColour) {
  std::set<std::string> colours;
  for (int k = 0; k < kOpKindCount; ++k) colours.insert(op_kind_colour(static_cast<OpKind>(k)));
  EXPECT_EQ(colours.size(), static_cast<std::size_t>(kOpKindCount));
}

class TraceRankRoles : public analysis_test::TempDirTest {};

TEST_F(TraceRankRoles, SurviveTheTraceFileAndStayOptional) {
  Trace trace = *analysis_test::heterogeneous_report_inputs(16, false).predicted_trace;
  trace.ranks[3].layers = -1;  // unknown: left out of the file
  const std::string path = write_text("t.json", trace_json(trace));
  const Trace back = read_trace_json(path);
  ASSERT_EQ(back.ranks.size(), 16u);
  EXPECT_EQ(back.ranks[5].stage, trace.ranks[5].stage);
  EXPECT_EQ(back.ranks[5].replica, trace.ranks[5].replica);
  EXPECT_EQ(back.ranks[5].layers, trace.ranks[5].layers);
  EXPECT_EQ(back.ranks[5].sequences, trace.ranks[5].sequences);
  EXPECT_EQ(back.ranks[3].layers, -1);
  EXPECT_EQ(trace_json(trace).find("\"layers\":-1"), std::string::npos);
}

}  // namespace
}  // namespace tandem::report
