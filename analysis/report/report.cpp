#include "analysis/report/report.hpp"

#include <nlohmann/json.hpp>

#include "analysis/report/html.hpp"
#include "analysis/report/plan.hpp"
#include "analysis/report/timeline.hpp"
#include "analysis/report/sections.hpp"
#include "common/input_error.hpp"

namespace tandem::report {

ReportInputs load_report_inputs(const ReportFiles& f, const CompareOptions& compare_options) {
  if (f.predicted_trace.empty() && f.measured_trace.empty() && f.prediction.empty() && f.measured_summary.empty() &&
      f.search.empty() && f.goodput.empty())
    throw InputError("command line", 0, "", "the report needs at least one input (a trace, a prediction, a run summary, search results or a goodput estimate)");
  ReportInputs in;
  if (!f.predicted_trace.empty()) in.predicted_trace = read_trace_json(f.predicted_trace);
  if (!f.measured_trace.empty()) in.measured_trace = read_trace_json(f.measured_trace);
  if (in.predicted_trace && in.measured_trace)
    in.comparison = compare_trace_files(f.predicted_trace, f.measured_trace, compare_options);
  if (!f.prediction.empty()) in.prediction = read_prediction_json(f.prediction);
  if (!f.measured_summary.empty()) in.measured = read_measured_summary_json(f.measured_summary);
  if (!f.search.empty()) in.search = read_search_json(f.search);
  if (!f.goodput.empty()) in.goodput = read_goodput_json(f.goodput);
  return in;
}

namespace {

nlohmann::json summary_json(const RunSummary& s) {
  nlohmann::json memory = nlohmann::json::array();
  for (const auto& m : s.memory)
    memory.push_back({{"label", m.label}, {"peak_bytes", m.peak_bytes}, {"capacity_bytes", m.capacity_bytes},
                      {"by_category", m.by_category}, {"out_of_memory", m.out_of_memory}});
  nlohmann::json breakdown = nlohmann::json::array();
  for (const auto& b : s.breakdown)
    breakdown.push_back({{"label", b.label}, {"compute_s", b.compute_s}, {"exposed_comm_s", b.exposed_comm_s},
                         {"idle_s", b.idle_s}});
  return {{"file", s.file}, {"scenario", s.scenario}, {"strategy", s.strategy}, {"model", s.model},
          {"devices", s.devices}, {"iteration_time_s", s.iteration_time_s}, {"tokens_per_s", s.tokens_per_s},
          {"mfu", s.mfu ? nlohmann::json(*s.mfu) : nlohmann::json(nullptr)}, {"breakdown", breakdown}, {"memory", memory}};
}

nlohmann::json search_json(const SearchResults& s) {
  nlohmann::json candidates = nlohmann::json::array();
  auto opt = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  for (const auto& c : s.candidates)
    candidates.push_back({{"rank", c.rank}, {"strategy", c.strategy}, {"iteration_time_s", c.iteration_time_s},
                          {"tokens_per_s", opt(c.tokens_per_s)}, {"mfu", opt(c.mfu)},
                          {"peak_memory_bytes", opt(c.peak_memory_bytes)}, {"goodput", opt(c.goodput)},
                          {"time_to_train_s", opt(c.time_to_train_s)}, {"pareto", c.pareto}});
  return {{"file", s.file}, {"scenario", s.scenario}, {"objective", s.objective}, {"candidates", candidates}};
}

// What the plots were drawn from, for anyone who opens the page's source or its console.
nlohmann::json embedded_data(const ReportInputs& in) {
  nlohmann::json data = nlohmann::json::object();
  if (in.comparison) data["comparison"] = to_json(*in.comparison);
  if (in.prediction) data["prediction"] = summary_json(*in.prediction);
  if (in.measured) data["measured"] = summary_json(*in.measured);
  if (in.search) data["search"] = search_json(*in.search);
  if (in.goodput) data["goodput"] = in.goodput->document.empty() ? nlohmann::json::object() : nlohmann::json::parse(in.goodput->document);
  return data;
}

constexpr const char* kStyle = R"CSS(
body { font-family: system-ui, sans-serif; margin: 24px; color: #222; }
h1 { font-size: 22px; } h2 { font-size: 18px; border-bottom: 1px solid #ccc; padding-bottom: 4px; }
h3 { font-size: 14px; margin-top: 18px; }
section { margin-bottom: 32px; }
p { max-width: 1100px; }
.cards { display: flex; flex-wrap: wrap; gap: 10px; margin-bottom: 12px; }
.card { border: 1px solid #ddd; border-radius: 6px; padding: 8px 12px; min-width: 140px; max-width: 520px; }
.card .name { font-size: 11px; color: #666; } .card .value { font-size: 16px; font-weight: 600; overflow-wrap: anywhere; }
.legend span { margin-right: 14px; font-size: 12px; white-space: nowrap; display: inline-block; }
.legend i { display: inline-block; width: 10px; height: 10px; margin-right: 4px; }
table { border-collapse: collapse; font-size: 12px; margin: 6px 0; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: right; white-space: nowrap; }
th { background: #f4f4f4; } td:nth-child(2) { white-space: normal; min-width: 160px; }
th:nth-child(-n+2), td:nth-child(-n+2) { text-align: left; }
details.rows summary { font-size: 12px; cursor: pointer; margin: 4px 0; }
svg.plot { display: block; margin: 6px 0; }
.plan-words, .plan-gain { font-size: 14px; }
.plan-gain { font-weight: 600; }
.timeline { width: 100%; }
.tl-toolbar { margin: 6px 0; font-size: 12px; }
.tl-toolbar button { margin-right: 6px; }
.tl-hint { color: #666; margin-left: 8px; }
.tl-row { display: flex; align-items: center; }
.tl-label { flex: 0 0 230px; font-size: 11px; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; padding-right: 6px; box-sizing: border-box; }
svg.tl-lanes { flex: 1 1 auto; width: 100%; min-width: 0; margin: 1px 0; background: #f7f7f7; cursor: grab; }
.tl-axis { position: relative; flex: 1 1 auto; height: 16px; border-bottom: 1px solid #888; font-size: 10px; color: #555; overflow: hidden; }
.tl-tick { position: absolute; top: 0; white-space: nowrap; }
.tl-group-title { font-size: 12px; font-weight: 600; margin: 8px 0 2px; }
.timeline details summary { font-size: 11px; color: #555; cursor: pointer; margin-left: 230px; }
#plot-census { display: none; }
)CSS";

// Errors are collected from the first line of the page on; the census (run last) writes what the
// page holds into #plot-census, which the headless-browser test reads back from the DOM.
constexpr const char* kErrorCatcher =
    "window.tandemErrors=[];window.addEventListener('error',function(e){window.tandemErrors.push(String(e.message));});";
constexpr const char* kCensus = R"JS(
(function () {
  var parts = [];
  document.querySelectorAll('section[data-section]').forEach(function (s) {
    var drawn = 0;
    s.querySelectorAll('svg.plot').forEach(function (svg) {
      var box = svg.getBoundingClientRect();
      if (box.width > 0 && box.height > 0 && svg.querySelectorAll('rect,circle,polyline,line').length > 0) drawn++;
    });
    parts.push(s.getAttribute('data-section') + '=' + drawn);
  });
  var data = JSON.parse(document.getElementById('tandem-report-data').textContent);
  var census = document.getElementById('plot-census');
  census.setAttribute('data-plots', parts.join(' '));
  census.setAttribute('data-errors', String(window.tandemErrors.length));
  census.setAttribute('data-inputs', Object.keys(data).join(' '));
})();
)JS";

}  // namespace

std::string render_report_html(const ReportInputs& in) {
  std::string title = "Tandem report";
  std::string html = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" + escape_html(title) +
                     "</title><script>" + kErrorCatcher + "</script><style>" + kStyle + "</style></head><body>\n";
  html += "<h1>" + escape_html(title) + "</h1>\n";
  for (auto* make : {summary_section, plan_section, timelines_section, errors_section, breakdown_section, memory_section,
                     search_section, goodput_section})
    html += make(in);
  html += "<script type=\"application/json\" id=\"tandem-report-data\">" + json_for_script(embedded_data(in).dump()) +
          "</script>\n<div id=\"plot-census\"></div>\n<script>" + kTimelineScript + kCensus + "</script>\n</body></html>\n";
  return html;
}

void write_report_html(const ReportInputs& inputs, const std::string& path) {
  write_file_atomically(path, render_report_html(inputs));
}

}  // namespace tandem::report
