#include "analysis/report/sections.hpp"

#include <algorithm>
#include <set>

#include "analysis/anomalies.hpp"
#include "analysis/format.hpp"
#include "analysis/iteration_view.hpp"
#include "analysis/report/charts.hpp"
#include "analysis/report/html.hpp"
#include "analysis/report/timeline.hpp"
#include "analysis/time_breakdown.hpp"
#include "common/duration_text.hpp"

namespace tandem::report {

namespace {

// Ranks drawn in per-rank plots; a note says how many more there are.
constexpr int kRanksDrawn = 16;

std::string side_name(const char* side, const Trace& trace) {
  return std::string(side) + (trace.source.empty() ? "" : " (" + trace.source + ")");
}

// Where the ranks ran: the predicted trace's list, else the measured one's (empty if neither says).
const std::vector<TraceRank>& trace_ranks_of(const ReportInputs& in) {
  static const std::vector<TraceRank> none;
  if (in.predicted_trace && !in.predicted_trace->ranks.empty()) return in.predicted_trace->ranks;
  if (in.measured_trace && !in.measured_trace->ranks.empty()) return in.measured_trace->ranks;
  return none;
}

std::string ranks_note(std::size_t ranks) {
  return ranks > static_cast<std::size_t>(kRanksDrawn)
             ? html_paragraph("The first " + std::to_string(kRanksDrawn) + " of " + std::to_string(ranks) +
                         " ranks are drawn; every rank is in the embedded data and the Perfetto trace.")
             : std::string();
}

}  // namespace

std::string summary_section(const ReportInputs& in) {
  std::string scenario, strategy;
  std::vector<BarRow> rows;
  std::string cards;
  if (in.prediction) scenario = in.prediction->scenario, strategy = in.prediction->strategy;
  if (in.measured && scenario.empty()) scenario = in.measured->scenario, strategy = in.measured->strategy;
  if (in.search && scenario.empty()) scenario = in.search->scenario;
  if (in.goodput && scenario.empty()) scenario = in.goodput->scenario;
  for (const auto* trace : {&in.predicted_trace, &in.measured_trace})
    if (*trace && scenario.empty()) scenario = (*trace)->scenario;
  cards += html_card("scenario", scenario.empty() ? "(unnamed)" : scenario);
  if (!strategy.empty()) cards += html_card("strategy", strategy);
  if (in.comparison) {
    const Comparison& c = *in.comparison;
    cards += html_card("predicted iteration", human_seconds(c.predicted.iteration_time_s));
    cards += html_card("measured iteration", human_seconds(c.measured.iteration_time_s));
    cards += html_card("iteration-time error", signed_percent(c.iteration_time_error));
    cards += html_card("matched ops", std::to_string(c.matched_ops) + " (" +
                                     std::to_string(c.predicted_only.size() + c.measured_only.size()) + " unmatched)");
    rows.push_back({"predicted trace", {c.predicted.iteration_time_s}, ""});
    rows.push_back({"measured trace", {c.measured.iteration_time_s}, signed_percent(c.iteration_time_error)});
  } else {
    for (const auto& [side, trace] : {std::pair{"predicted", &in.predicted_trace}, std::pair{"measured", &in.measured_trace}}) {
      if (!*trace) continue;
      const Seconds mean_s = mean_iteration_period_s(iteration_spans(**trace));
      cards += html_card(std::string(side) + " iteration", human_seconds(mean_s));
      rows.push_back({std::string(side) + " trace", {mean_s}, ""});
    }
  }
  for (const auto& [side, summary] : {std::pair{"predicted", &in.prediction}, std::pair{"measured", &in.measured}}) {
    if (!*summary) continue;
    const RunSummary& s = **summary;
    cards += html_card(std::string(side) + " throughput", printf_string("%.4g tokens/s", s.tokens_per_s));
    if (s.mfu) cards += html_card(std::string(side) + " MFU", printf_string("%.1f %%", 100 * *s.mfu));
    rows.push_back({std::string(side) + " summary", {s.iteration_time_s}, ""});
  }
  if (in.search && !in.search->candidates.empty()) {
    const SearchCandidate& best = in.search->candidates.front();
    cards += html_card("best searched strategy", best.strategy);
    if (in.search->heterogeneity)
      cards += html_card("heterogeneity-aware vs uniform",
                    printf_string(in.search->heterogeneity->gain_percent >= 0 ? "%.1f %% better" : "%.1f %% worse",
                                  std::abs(in.search->heterogeneity->gain_percent)));
    rows.push_back({"search: best", {best.iteration_time_s}, ""});
  }
  if (in.goodput && in.goodput->iteration_s) rows.push_back({"goodput: failure-free", {*in.goodput->iteration_s}, ""});
  const std::string plot = rows.empty() ? "" : grouped_bar_chart("Iteration time", {"iteration time"}, rows, human_seconds);
  // What the prediction rests on (its device profiles and collective model), as simulate says it.
  std::string rests_on;
  if (in.prediction && !in.prediction->rests_on.empty()) {
    rests_on = html_paragraph("The prediction rests on:");
    for (const std::string& line : in.prediction->rests_on) rests_on += html_paragraph(line, "basis");
  }
  return html_section("summary", "Summary", "<div class=\"cards\">" + cards + "</div>" + plot + rests_on);
}

std::string timelines_section(const ReportInputs& in) {
  if (!in.predicted_trace && !in.measured_trace) return "";
  // One real iteration per side (the median one), on one time axis.
  std::vector<TimelineSide> sides;
  if (in.predicted_trace) sides.push_back({side_name("predicted", *in.predicted_trace), median_iteration(*in.predicted_trace)});
  if (in.measured_trace) sides.push_back({side_name("measured", *in.measured_trace), median_iteration(*in.measured_trace)});
  const std::vector<TraceRank>& ranks = trace_ranks_of(in);
  std::string body = html_paragraph("The median iteration of each side, times from its start, on one axis; colour = op kind. "
                               "Ranks are grouped by device group and pipeline stage: each group shows its first rank "
                               "(more behind its toggle). In a lane, the thick row is the compute stream and each thin "
                               "row below a communication stream. Hover a bar for the op.");
  body += timelines_html(sides, ranks);
  return html_section("timelines", "Timelines", body);
}

std::string errors_section(const ReportInputs& in) {
  if (!in.comparison) return "";
  const Comparison& c = *in.comparison;
  std::vector<BarRow> rows;
  for (const auto& [kind, t] : c.by_kind)
    rows.push_back({to_string(kind), {t.predicted_s, t.measured_s}, signed_percent(t.error())});
  std::string body = html_paragraph("Time per iteration of the matched ops, per op kind; error = (predicted - measured) / "
                               "measured. Alignment: " + std::string(to_string(c.alignment)) + ".");
  body += legend_html({{"predicted", 0}, {"measured", 1}});
  body += grouped_bar_chart("Predicted vs measured time per op kind", {"predicted", "measured"}, rows, human_seconds);

  std::vector<std::vector<std::string>> groups;
  auto add_rows = [&](const std::string& name, const TimeTotals& t) {
    groups.push_back({name, human_seconds(t.predicted_s), human_seconds(t.measured_s), human_seconds(t.difference_s()),
                      signed_percent(t.error()), std::to_string(t.ops)});
  };
  for (const auto& [rank, t] : c.by_rank) add_rows("rank " + std::to_string(rank), t);
  for (const auto& [stream, t] : c.by_stream) add_rows(std::string("stream ") + to_string(stream), t);
  add_rows("all matched ops", c.matched);
  const std::string per_rank = html_table({"group", "predicted", "measured", "difference", "error", "ops"}, groups);
  // Dozens of ranks make a long table: folded behind a toggle past a screenful.
  body += "<h3>Per rank and stream</h3>" +
          (groups.size() <= 20 ? per_rank
                               : "<details class=\"rows\"><summary>" + std::to_string(groups.size()) +
                                     " rows: every rank, stream and all matched ops</summary>" + per_rank + "</details>");

  std::vector<std::vector<std::string>> paths;
  for (const auto& [side, s] : {std::pair{"predicted", &c.predicted}, std::pair{"measured", &c.measured}}) {
    const CriticalPath& p = s->critical_path;
    std::vector<std::pair<Seconds, OpKind>> kinds;
    for (const auto& [kind, t] : p.busy_by_kind_s) kinds.push_back({t, kind});
    std::sort(kinds.rbegin(), kinds.rend());
    std::string top;
    for (std::size_t i = 0; i < std::min<std::size_t>(4, kinds.size()); ++i)
      top += std::string(i ? ", " : "") + to_string(kinds[i].second) + " " + human_seconds(kinds[i].first);
    paths.push_back({side, human_seconds(p.length_s), human_seconds(p.busy_s), human_seconds(p.gap_s),
                     std::to_string(p.steps.size()), top,
                     p.steps.empty() ? "" : p.steps.back().op.op_id + " (rank " + std::to_string(p.steps.back().op.rank) + ")"});
  }
  body += "<h3>Critical paths (mean iteration)</h3>" +
          html_table({"side", "length", "busy", "gaps", "ops", "busiest kinds", "ends with"}, paths);

  std::vector<std::vector<std::string>> largest;
  for (const auto& d : c.largest_differences)
    largest.push_back({std::to_string(d.key.rank), std::to_string(d.key.iteration), d.key.display(), to_string(d.kind),
                       to_string(d.stream), human_seconds(d.predicted_s), human_seconds(d.measured_s),
                       human_seconds(d.difference_s())});
  body += "<h3>Largest differences per op</h3>" +
          html_table({"rank", "iteration", "op", "kind", "stream", "predicted", "measured", "difference"}, largest);
  body += html_paragraph(std::to_string(c.predicted_only.size()) + " op(s) only in the predicted trace, " +
                    std::to_string(c.measured_only.size()) + " only in the measured trace (listed in the embedded data).");
  return html_section("errors", "Error by op kind", body);
}

namespace {

// Stragglers and slow ops of each trace (anomalies.hpp): a table, or a line saying none stands out.
std::string anomalies_html(const ReportInputs& in) {
  std::string out;
  for (const auto& [side, trace] : {std::pair{"predicted", &in.predicted_trace}, std::pair{"measured", &in.measured_trace}}) {
    if (!*trace) continue;
    const Anomalies a = std::string(side) == "measured" && in.comparison ? in.comparison->measured_anomalies
                                                                         : find_anomalies(**trace);
    out += "<h3>Stragglers and slow ops: " + escape_html(side) + "</h3>";
    if (a.ranks.empty() && a.ops.empty()) {
      out += html_paragraph(a.ranks_checked == 0 ? "No peer group of 3 or more ranks (same device and stage): a straggler "
                                              "cannot be told from the work's own differences."
                                            : "None: every rank's compute is within the noise of its peers' (" +
                                                  std::to_string(a.ranks_checked) + " ranks checked).");
      continue;
    }
    std::vector<std::vector<std::string>> rows;
    for (const auto& r : a.ranks)
      rows.push_back({"rank " + std::to_string(r.rank), "all compute", human_seconds(r.compute_s),
                      human_seconds(r.peers_median_s), printf_string("%+.1f %%", 100 * r.slower())});
    for (const auto& o : a.ops)
      rows.push_back({"rank " + std::to_string(o.rank), o.op_id + " (" + to_string(o.kind) + ")", human_seconds(o.duration_s),
                      human_seconds(o.peers_median_s), printf_string("%+.1f %%", 100 * o.slower())});
    out += html_table({"rank", "what", "time per iteration", "peers' median", "slower"}, rows);
  }
  return out;
}

}  // namespace

std::string breakdown_section(const ReportInputs& in) {
  std::vector<BarRow> rows;
  std::size_t ranks_total = 0;
  const std::vector<TraceRank>& ranks = trace_ranks_of(in);
  auto add_row = [&](const std::string& label, const RankTimeBreakdown& b) {
    rows.push_back({label, {b.compute_s, b.exposed_comm_s, b.idle_s}, human_seconds(b.compute_s + b.exposed_comm_s + b.idle_s)});
  };
  for (const auto& [side, trace] : {std::pair{"predicted", &in.predicted_trace}, std::pair{"measured", &in.measured_trace}}) {
    if (!*trace) continue;
    const auto breakdown = time_breakdown(median_iteration(**trace).records);
    if (!ranks.empty()) {
      // One row per device group and stage: the mean of its ranks (every group shown).
      std::vector<int> seen;
      for (const auto& [rank, b] : breakdown) seen.push_back(rank);
      for (const LaneGroup& g : lane_groups(ranks, seen)) {
        RankTimeBreakdown mean;
        for (int rank : g.ranks) {
          const RankTimeBreakdown& b = breakdown.at(rank);
          mean.compute_s += b.compute_s, mean.exposed_comm_s += b.exposed_comm_s, mean.idle_s += b.idle_s;
        }
        const double n = static_cast<double>(g.ranks.size());
        mean.compute_s /= n, mean.exposed_comm_s /= n, mean.idle_s /= n;
        add_row(std::string(side) + " · " + g.device + (g.stage >= 0 ? " · stage " + std::to_string(g.stage) : "") +
                    " (" + std::to_string(g.ranks.size()) + " ranks)",
                mean);
      }
      continue;
    }
    ranks_total = std::max(ranks_total, breakdown.size());
    int drawn = 0;
    for (const auto& [rank, b] : breakdown) {
      if (drawn++ == kRanksDrawn) break;
      add_row(std::string(side) + " · rank " + std::to_string(rank), b);
    }
  }
  if (in.prediction)
    for (const auto& b : in.prediction->breakdown)
      rows.push_back({"prediction · " + b.label, {b.compute_s, b.exposed_comm_s, b.idle_s},
                      human_seconds(b.compute_s + b.exposed_comm_s + b.idle_s)});
  if (rows.empty()) return "";
  std::string body = html_paragraph("Per iteration: computing, communicating with nothing to hide it (exposed), idle. "
                               "Trace rows are the median iteration, averaged over the ranks of a device group and "
                               "stage.") +
                     legend_html({{"compute", 0}, {"exposed communication", 1}, {"idle", 2}}) + ranks_note(ranks_total);
  body += stacked_bar_chart("Time breakdown", {"compute", "exposed communication", "idle"}, rows, human_seconds);
  body += anomalies_html(in);
  return html_section("breakdown", "Time breakdown", body);
}

std::string memory_section(const ReportInputs& in) {
  std::vector<std::string> categories;
  std::vector<const MemoryRow*> all;
  std::vector<std::string> labels;
  for (const auto& [side, summary] : {std::pair{"predicted", &in.prediction}, std::pair{"measured", &in.measured}}) {
    if (!*summary) continue;
    int drawn = 0;
    for (const auto& row : (*summary)->memory) {
      if (drawn++ == kRanksDrawn) break;
      all.push_back(&row), labels.push_back(std::string(side) + " · " + row.label);
      for (const auto& [name, bytes] : row.by_category)
        if (std::find(categories.begin(), categories.end(), name) == categories.end()) categories.push_back(name);
    }
  }
  if (all.empty()) return "";
  const bool uncategorised = categories.empty();
  if (uncategorised) categories.push_back("peak");
  std::vector<BarRow> rows;
  for (std::size_t i = 0; i < all.size(); ++i) {
    BarRow row{labels[i], {}, human_bytes(all[i]->peak_bytes)};
    for (const auto& name : categories) {
      auto found = all[i]->by_category.find(name);
      row.values.push_back(uncategorised ? all[i]->peak_bytes : found == all[i]->by_category.end() ? 0 : found->second);
    }
    if (all[i]->capacity_bytes > 0)
      row.note += printf_string(" (%.0f %%)", 100 * all[i]->peak_bytes / all[i]->capacity_bytes);
    if (all[i]->out_of_memory) row.note += " OUT OF MEMORY";
    rows.push_back(std::move(row));
  }
  std::vector<std::pair<std::string, int>> legend;
  for (std::size_t i = 0; i < categories.size(); ++i) legend.push_back({categories[i], static_cast<int>(i)});
  std::string body = html_paragraph("Peak memory per device (prediction: per device group, its largest rank; "
                               "measurement: per rank), by category at the peak.") + legend_html(legend);
  body += stacked_bar_chart("Peak memory per device", categories, rows, human_bytes);
  return html_section("memory", "Memory per device", body);
}

// A search by time to a target loss: the measured loss per step of the best plans' strategies
// against predicted wall time (step k at k x the plan's simulated step), the target dashed. Where
// a curve crosses the target first is the ranking, drawn; the caption says what is measured and
// what is simulated.
std::string loss_against_time_chart(const SearchResults& s) {
  constexpr int kMostLines = 6;
  std::vector<LineSeries> series;
  std::vector<std::pair<std::string, int>> legend;
  for (const SearchCandidate& c : s.candidates) {
    if (c.loss_per_step.empty() || static_cast<int>(series.size()) == kMostLines) continue;
    LineSeries line{"#" + std::to_string(c.rank) + " " + c.strategy, static_cast<int>(series.size()), {}};
    for (std::size_t k = 0; k < c.loss_per_step.size(); ++k)
      line.points.push_back({static_cast<double>(k + 1) * c.iteration_time_s, c.loss_per_step[k]});
    legend.push_back({line.name, line.colour});
    series.push_back(std::move(line));
  }
  if (series.empty()) return "";
  const std::string caption =
      "Loss against predicted wall time, the " + std::to_string(series.size()) +
      " best plans: each loss measured per step" + (s.objective_basis.empty() ? "" : " (" + s.objective_basis + ")") +
      ", each step at the plan's simulated step time.";
  return html_paragraph(caption) +
         line_chart("Loss vs predicted wall time", "predicted wall time", "loss", series, s.target_loss, human_seconds,
                    [](double v) { return printf_string("%.2f", v); }) +
         legend_html(legend);
}

std::string search_section(const ReportInputs& in) {
  if (!in.search) return "";
  const SearchResults& s = *in.search;
  std::vector<std::vector<std::string>> rows;
  std::vector<ScatterPoint> points;
  auto optional_text = [](const auto& v, auto format) { return v ? format(*v) : std::string("-"); };
  // A goodput-aware search (objective time_to_train) says each plan's goodput and time to train.
  const bool reliability = std::any_of(s.candidates.begin(), s.candidates.end(),
                                       [](const SearchCandidate& c) { return c.goodput.has_value(); });
  for (const auto& c : s.candidates) {
    std::string breakdown = "-";
    if (c.compute_s && c.exposed_comm_s && c.idle_s)
      breakdown = human_seconds(*c.compute_s) + " / " + human_seconds(*c.exposed_comm_s) + " / " + human_seconds(*c.idle_s);
    rows.push_back({std::to_string(c.rank), c.strategy, human_seconds(c.iteration_time_s),
                    optional_text(c.tokens_per_s, [](double v) { return printf_string("%.4g", v); }),
                    optional_text(c.mfu, [](double v) { return printf_string("%.1f %%", 100 * v); }),
                    optional_text(c.peak_memory_bytes, human_bytes),
                    c.fits_in_memory ? (*c.fits_in_memory ? "yes" : "no") : "-", breakdown, c.pareto ? "yes" : ""});
    if (reliability) {
      rows.back().push_back(optional_text(c.goodput, [](double v) { return printf_string("%.1f %%", 100 * v); }));
      rows.back().push_back(optional_text(c.time_to_train_s, format_duration));
    }
    const bool labelled = c.pareto || c.rank <= 5;
    points.push_back({c.iteration_time_s, c.peak_memory_bytes.value_or(0), c.pareto,
                      labelled ? "#" + std::to_string(c.rank) : "",
                      "#" + std::to_string(c.rank) + " " + c.strategy + ": " + human_seconds(c.iteration_time_s)});
  }
  std::string body = html_paragraph(std::to_string(s.candidates.size()) + " candidates, objective " + s.objective + "; " +
                               (s.pareto_given ? "Pareto front as given by the search."
                                               : "Pareto front computed here (iteration time and peak memory, both minimised)."));
  body += scatter_chart("Iteration time vs peak memory (Pareto front highlighted)", "iteration time",
                        "peak memory per device", points, human_seconds, human_bytes);
  body += loss_against_time_chart(s);
  std::vector<std::string> header{"rank", "strategy", "iteration", "tokens/s", "MFU", "peak memory", "fits",
                                  "compute / exposed comm / idle", "Pareto"};
  if (reliability) header.insert(header.end(), {"goodput", "time to train"});
  body += html_table(header, rows);
  return html_section("search", "Search results", body);
}

}  // namespace tandem::report
