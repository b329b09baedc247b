#include "analysis/report/report.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include "common/input_error.hpp"
#include "tests/analysis/report_inputs_fixture.hpp"
#include "tests/analysis/temp_dir_test_base.hpp"

namespace tandem::report {
namespace {

// Section name → number of <svg class="plot"> inside it. Found with find(), not a regex over the
// sections' bodies: libstdc++'s regex recurses once per character and overflowed the stack on a
// report of a few hundred kB (AddressSanitizer's larger frames showed it).
std::map<std::string, int> plots_per_section(const std::string& html) {
  std::map<std::string, int> out;
  const std::string open = "<section data-section=\"", close = "</section>";
  for (std::size_t at = html.find(open); at != std::string::npos; at = html.find(open, at + 1)) {
    const std::size_t name_end = html.find('"', at + open.size());
    const std::size_t body_end = html.find(close, name_end);
    if (name_end == std::string::npos || body_end == std::string::npos) break;
    const std::string body = html.substr(name_end, body_end - name_end);
    int plots = 0;
    for (std::size_t p = body.find("<svg class=\"plot"); p != std::string::npos; p = body.find("<svg class=\"plot", p + 1))
      ++plots;
    out[html.substr(at + open.size(), name_end - at - open.size())] = plots;
  }
  return out;
}

TEST(Report, HoldsEverySectionWithAPlotWhenEveryInputIsGiven) {
  const std::string html = render_report_html(analysis_test::full_report_inputs());
  const auto plots = plots_per_section(html);
  for (const char* name : {"summary", "timelines", "errors", "breakdown", "memory", "search"}) {
    ASSERT_TRUE(plots.count(name)) << name;
    EXPECT_GE(plots.at(name), 1) << name;
  }
  EXPECT_EQ(plots.at("timelines"), 4);  // 2 ranks × (predicted, measured)
}

TEST(Report, SectionsFollowTheInputs) {
  ReportInputs only_search;
  only_search.search = analysis_test::full_report_inputs().search;
  const auto plots = plots_per_section(render_report_html(only_search));
  EXPECT_EQ(plots.size(), 3u);
  EXPECT_TRUE(plots.count("summary"));
  EXPECT_TRUE(plots.count("plan"));  // the winner against its runners-up
  EXPECT_TRUE(plots.count("search"));

  ReportInputs one_trace;
  one_trace.measured_trace = analysis_test::full_report_inputs().measured_trace;
  const auto trace_plots = plots_per_section(render_report_html(one_trace));
  EXPECT_TRUE(trace_plots.count("timelines"));
  EXPECT_TRUE(trace_plots.count("breakdown"));
  EXPECT_FALSE(trace_plots.count("errors"));  // nothing to compare with
  EXPECT_EQ(trace_plots.at("timelines"), 2);
}

TEST(Report, EscapesEveryStringFromTheInputs) {
  ReportInputs in = analysis_test::full_report_inputs("<script>alert(\"op\")</script>");
  in.prediction->strategy = "dp & \"tp\" <b>";
  const std::string html = render_report_html(in);
  EXPECT_EQ(html.find("<script>alert"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(&quot;op&quot;)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(html.find("dp &amp; &quot;tp&quot; &lt;b&gt;"), std::string::npos);
  // The embedded data cannot close its script element early.
  const std::size_t data = html.find("id=\"tandem-report-data\">");
  ASSERT_NE(data, std::string::npos);
  const std::size_t data_end = html.find("</script>", data);
  EXPECT_NE(html.substr(data, data_end - data).find("\\u003cscript>alert"), std::string::npos);
}

TEST(Report, IsSelfContained) {
  const std::string html = render_report_html(analysis_test::full_report_inputs());
  EXPECT_FALSE(std::regex_search(html, std::regex("(src|href)\\s*=\\s*[\"']?\\s*(https?:)?//")));
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("<script src"), std::string::npos);
  EXPECT_EQ(html.find("@import"), std::string::npos);
}

TEST(Report, EmbedsTheDataBehindThePlots) {
  const std::string html = render_report_html(analysis_test::full_report_inputs());
  const std::size_t start = html.find("id=\"tandem-report-data\">") + std::string("id=\"tandem-report-data\">").size();
  const nlohmann::json data = nlohmann::json::parse(html.substr(start, html.find("</script>", start) - start));
  EXPECT_DOUBLE_EQ(data["comparison"]["iteration_time"]["error"].get<double>(), -0.5);
  EXPECT_EQ(data["search"]["candidates"].size(), 3u);
  EXPECT_EQ(data["prediction"]["memory"][0]["capacity_bytes"], 80e9);
}

TEST(Report, NeedsAtLeastOneInput) {
  EXPECT_THROW(load_report_inputs(ReportFiles{}), InputError);
}

class ReportFilesTest : public analysis_test::TempDirTest {};

TEST_F(ReportFilesTest, ReadsSearchResultsAndComputesTheFrontWhenNotGiven) {
  const std::string path = write_text("s.json", R"({"schema": "tandem-search/1", "candidates": [
      {"rank": 2, "strategy": "slow but small", "iteration_time_s": 3, "peak_memory_bytes": 1},
      {"rank": 1, "strategy": "fast", "iteration_time_s": 1, "peak_memory_bytes": 5},
      {"rank": 3, "strategy": "dominated", "iteration_time_s": 4, "peak_memory_bytes": 6}]})");
  const SearchResults s = read_search_json(path);
  ASSERT_EQ(s.candidates.size(), 3u);
  EXPECT_EQ(s.candidates[0].strategy, "fast");  // ordered by rank
  EXPECT_FALSE(s.pareto_given);
  EXPECT_TRUE(s.candidates[0].pareto);
  EXPECT_TRUE(s.candidates[1].pareto);
  EXPECT_FALSE(s.candidates[2].pareto);
}

// A goodput-aware search (objective time_to_train) gives each plan's goodput and time to train:
// the search section's table says them; a goodput outside (0, 1] is an error at its field.
TEST_F(ReportFilesTest, AGoodputAwareSearchShowsEachPlansGoodputAndTimeToTrain) {
  const std::string path = write_text("s.json", R"({"schema": "tandem-search/1", "objective": "time_to_train",
      "candidates": [
      {"rank": 1, "strategy": "two nodes", "iteration_time_s": 1.2, "goodput": 0.372, "time_to_train_s": 186624},
      {"rank": 2, "strategy": "eight nodes", "iteration_time_s": 0.34, "goodput": 0.02, "time_to_train_s": 950400}]})");
  ReportInputs inputs;
  inputs.search = read_search_json(path);
  ASSERT_TRUE(inputs.search->candidates[0].goodput.has_value());
  const std::string html = render_report_html(inputs);
  EXPECT_NE(html.find("<th>time to train</th>"), std::string::npos);
  EXPECT_NE(html.find("37.2 %"), std::string::npos);
  EXPECT_NE(html.find("2.16 d"), std::string::npos);  // 186,624 s
  try {
    read_search_json(write_text("g.json", R"({"schema": "tandem-search/1", "candidates": [
        {"strategy": "a", "iteration_time_s": 1, "goodput": 1.5}]})"));
    FAIL() << "no InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "candidates[0].goodput");
  }
}

// A search by time to a target loss gives each plan's measured loss per step: the search section
// plots loss against predicted wall time (step k at k x the plan's step), the target dashed; a
// search without curves has no such plot; a loss that is not a number is an error at its field.
TEST_F(ReportFilesTest, ASearchByTimeToTargetLossPlotsLossAgainstPredictedWallTime) {
  const std::string path = write_text("s.json", R"({"schema": "tandem-search/1", "objective": "time_to_target_loss",
      "objective_basis": "steps measured on a tiny model", "target_loss": 3.6, "candidates": [
      {"rank": 1, "strategy": "local sgd", "iteration_time_s": 0.1, "loss_per_step": [5, 4, 3.5, 3.2, 3.1]},
      {"rank": 2, "strategy": "sync", "iteration_time_s": 0.2, "loss_per_step": [5, 3.9, 3.4, 3.1, 3.0]}]})");
  ReportInputs inputs;
  inputs.search = read_search_json(path);
  ASSERT_EQ(inputs.search->candidates[1].loss_per_step.size(), 5u);
  ASSERT_EQ(inputs.search->target_loss, 3.6);
  const std::string html = render_report_html(inputs);
  EXPECT_EQ(plots_per_section(html)["search"], 2);  // the Pareto scatter and the loss plot
  EXPECT_NE(html.find("aria-label=\"Loss vs predicted wall time\""), std::string::npos);
  EXPECT_NE(html.find("steps measured on a tiny model"), std::string::npos);
  EXPECT_NE(html.find(">3.60<"), std::string::npos);  // the target's mark
  EXPECT_NE(html.find("#2 sync"), std::string::npos);  // the legend
  ReportInputs without = analysis_test::full_report_inputs();
  EXPECT_EQ(render_report_html(without).find("Loss vs predicted wall time"), std::string::npos);
  try {
    read_search_json(write_text("l.json", R"({"schema": "tandem-search/1", "candidates": [
        {"strategy": "a", "iteration_time_s": 1, "loss_per_step": [3, null]}]})"));
    FAIL() << "no InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "candidates[0].loss_per_step");
  }
}

TEST_F(ReportFilesTest, AMalformedSearchFileNamesTheField) {
  const std::string path = write_text("s.json", R"({"schema": "tandem-search/1", "candidates": [
      {"strategy": "a", "iteration_time_s": 1}, {"strategy": "b", "iteration_time_s": "fast"}]})");
  try {
    read_search_json(path);
    FAIL() << "no InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), path);
    EXPECT_EQ(e.field(), "candidates[1].iteration_time_s");
  }
  EXPECT_THROW(read_search_json(write_text("t.json", R"({"schema": "other"})")), InputError);
}

TEST_F(ReportFilesTest, AMalformedPredictionNamesTheField) {
  const std::string path = write_text("p.json", R"({"scenario": "x", "devices": 2, "iteration_time_s": 1,
      "tokens_per_s": 1, "time_breakdown_mean": {"compute_s": 1, "exposed_comm_s": 0, "idle_s": 0},
      "memory": [{"group": "g", "ranks": 2, "capacity_bytes": 1, "at_peak_bytes": {}}]})");
  try {
    read_prediction_json(path);
    FAIL() << "no InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "memory[0].peak_max_bytes");
  }
}

// A prediction says what it rests on (its profiles' bases, what times its collectives); the report
// shows those lines under the summary, escaped, and a line that is not text is named.
TEST_F(ReportFilesTest, APredictionsBasisIsShownUnderTheSummary) {
  const std::string head = R"({"scenario": "x", "devices": 2, "iteration_time_s": 1, "tokens_per_s": 1,
      "time_breakdown_mean": {"compute_s": 1, "exposed_comm_s": 0, "idle_s": 0},
      "memory": [{"group": "g", "device": "H100-SXM", "device_basis": "datasheet peaks <sourced>", "ranks": 2,
                  "peak_max_bytes": 1, "capacity_bytes": 2, "at_peak_bytes": {}}], )";
  ReportInputs in;
  in.prediction = read_prediction_json(write_text("p.json", head + R"("collectives_basis": ["H100-SXM: NCCL model"]})"));
  ASSERT_EQ(in.prediction->rests_on.size(), 2u);
  EXPECT_EQ(in.prediction->rests_on[0], "H100-SXM: datasheet peaks <sourced>");
  EXPECT_EQ(in.prediction->rests_on[1], "collectives, H100-SXM: NCCL model");
  const std::string html = render_report_html(in);
  EXPECT_NE(html.find("datasheet peaks &lt;sourced&gt;"), std::string::npos);
  EXPECT_NE(html.find("collectives, H100-SXM: NCCL model"), std::string::npos);
  try {
    read_prediction_json(write_text("q.json", head + R"("collectives_basis": [3]})"));
    FAIL() << "no InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "collectives_basis[0]");
  }
}

TEST_F(ReportFilesTest, IsWrittenAtomicallyToTheGivenPath) {
  const std::string path = (dir_ / "report.html").string();
  write_report_html(analysis_test::full_report_inputs(), path);
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(text.find("</html>"), std::string::npos);
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir_), std::filesystem::directory_iterator()), 1);
}

}  // namespace
}  // namespace tandem::report
