// `tandem report`: one self-contained HTML file (inline SVG plots, inline CSS and script, no
// network needed) putting together what the inputs allow:
//   summary     headline numbers and the iteration time of each side (always)
//   plan        the strategy in words and as a picture (stages, layers and batch shares per
//               device group, collectives per group), the heterogeneity gain and why the winner
//               beats its runners-up (a trace with its ranks, or search results; plan.hpp)
//   timelines   one iteration per side on one zoomable time axis, ranks grouped by device group
//               and pipeline stage (a trace; timeline.hpp)
//   errors      predicted vs measured time and error per op kind, critical paths, largest
//               differences (both traces)
//   breakdown   compute / exposed communication / idle per device group and stage (a trace or a
//               prediction)
//   memory      peak memory per device by category (a prediction or a measured run summary)
//   search      the ranked candidates and the Pareto front (search results)
//   goodput     goodput over a horizon: one trial's timeline with its failures, where the wall
//               time went, the checkpoint-interval sweep (a goodput estimate)
// Each section is a <section data-section="NAME"> holding at least one <svg class="plot">. The
// inputs are embedded as JSON (<script type="application/json" id="tandem-report-data">), so the
// numbers behind the plots can be inspected. Every string from the inputs is escaped.
#pragma once

#include <optional>
#include <string>

#include "analysis/compare.hpp"
#include "analysis/report/goodput_summary.hpp"
#include "analysis/report/run_summary.hpp"
#include "analysis/report/search_results.hpp"
#include "analysis/trace.hpp"

namespace tandem::report {

struct ReportFiles {
  std::string predicted_trace;   // tandem simulate --trace
  std::string measured_trace;    // tandem run --trace
  std::string prediction;        // tandem simulate --json
  std::string measured_summary;  // tandem run --json
  std::string search;            // search results, schema tandem-search/1
  std::string goodput;           // tandem goodput --json
};

struct ReportInputs {
  std::optional<Trace> predicted_trace;
  std::optional<Trace> measured_trace;
  std::optional<Comparison> comparison;  // when both traces are given
  std::optional<RunSummary> prediction;
  std::optional<RunSummary> measured;
  std::optional<SearchResults> search;
  std::optional<GoodputSummary> goodput;
};

// Reads the files given (at least one; InputError otherwise, or on any malformed file) and
// compares the traces when both are given.
ReportInputs load_report_inputs(const ReportFiles& files, const CompareOptions& compare_options = {});

std::string render_report_html(const ReportInputs& inputs);
void write_report_html(const ReportInputs& inputs, const std::string& path);  // atomic

}  // namespace tandem::report
