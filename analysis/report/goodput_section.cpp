// The report's goodput section (a `tandem goodput --json` estimate): the headline, one trial's
// timeline with its failures marked, where the wall time went, and the checkpoint-interval sweep
// against Young's and Daly's formulas.
#include <algorithm>

#include "analysis/format.hpp"
#include "analysis/report/charts.hpp"
#include "analysis/report/html.hpp"
#include "analysis/report/sections.hpp"
#include "common/duration_text.hpp"

namespace tandem::report {

namespace {

std::string percent(double fraction) { return printf_string("%.2f %%", 100 * fraction); }

std::string with_interval(const Interval95& i, std::string (*format)(double)) {
  return format(i.mean) + " [" + format(i.low) + ", " + format(i.high) + "]";
}

std::string tokens_per_s(double v) { return printf_string("%.4g", v); }
std::string duration(double s) { return format_duration(s); }

// The trial's throughput as a step line over the whole horizon, each failure a marked event.
std::string timeline_chart(const GoodputSummary& g) {
  if (g.timeline.empty()) return "";
  LineSeries line{"throughput (one trial, seed's)", 0, {}};
  std::vector<XMark> failures;
  int failures_so_far = 0;
  for (std::size_t i = 0; i < g.timeline.size(); ++i) {
    const GoodputStep& step = g.timeline[i];
    const Seconds end_s = i + 1 < g.timeline.size() ? g.timeline[i + 1].t_s : g.horizon_s;
    line.points.push_back({step.t_s, step.throughput});
    line.points.push_back({end_s, step.throughput});
    if (step.failures > failures_so_far)
      failures.push_back({step.t_s, "failure " + std::to_string(step.failures) + " at " + format_duration(step.t_s) +
                                        ": " + step.state,
                          ""});
    failures_so_far = step.failures;
  }
  const std::string caption =
      "One trial of the Monte Carlo (the seed's own): the job's throughput as a share of its full-width, unslowed "
      "speed, 0 while it restarts or waits; each failure a dashed red line (its time and what followed on hover). " +
      std::to_string(failures_so_far) + " failure(s) in this trial; the mean over " + std::to_string(g.trials) +
      " trials is " + printf_string("%.2f", g.failures.mean) + ".";
  return html_paragraph(caption) + line_chart("Throughput over the horizon (one trial)", "time since the job started",
                                              "throughput (share of full speed)", {line}, std::nullopt, duration,
                                              percent, failures);
}

// The time lost, the mean over the trials as a share of the horizon: per failure cause the work
// lost since the last checkpoint, the restarts and the waiting for a repair; then the checkpoints'
// pauses and the time run below full speed (shrunk, slowed, regrowing). Useful work is left out of
// the bars (it would dwarf them) and said in the caption.
std::string time_chart(const GoodputSummary& g) {
  const std::vector<std::string> categories{"lost work", "restarts", "waiting", "paused or below full speed"};
  std::vector<BarRow> rows;
  auto share = [&](Seconds s) { return s / g.horizon_s; };
  for (const auto& [cause, t] : g.by_cause)
    rows.push_back({cause + " failures", {share(t.lost_work_s), share(t.restart_s), share(t.waiting_s), 0},
                    percent(share(t.lost_work_s + t.restart_s + t.waiting_s))});
  const std::pair<const char*, const char*> uses[] = {{"checkpoint", "checkpoints"},
                                                      {"degraded", "shrunk (fewer devices)"},
                                                      {"slowed", "slowed (stragglers)"},
                                                      {"regrow", "regrowing to full width"}};
  for (const auto& [key, label] : uses) {
    const auto found = g.time_s.find(key);
    if (found != g.time_s.end() && found->second > 0)
      rows.push_back({label, {0, 0, 0, share(found->second)}, percent(share(found->second))});
  }
  const auto useful = g.time_s.find("useful");
  std::string caption = "Where the wall time is lost, the mean over the trials as a share of the horizon (" +
                        format_duration(g.horizon_s) + ")";
  if (useful != g.time_s.end()) caption += "; the rest, " + percent(share(useful->second)) + ", trains at full speed";
  if (rows.empty()) return html_paragraph(caption + "; nothing was lost.");
  std::vector<std::pair<std::string, int>> legend;
  for (std::size_t i = 0; i < categories.size(); ++i) legend.push_back({categories[i], static_cast<int>(i)});
  return html_paragraph(caption + ".") + legend_html(legend) +
         stacked_bar_chart("Time lost by cause", categories, rows, percent);
}

// The time lost (1 - goodput) per checkpoint interval, Young's and Daly's intervals marked.
std::string sweep_chart(const GoodputSummary& g) {
  if (g.sweep.empty()) return "";
  LineSeries line{"time lost (1 - goodput)", 1, {}};
  for (const GoodputSweepPoint& p : g.sweep) line.points.push_back({p.interval_s, 1 - p.goodput});
  std::vector<XMark> marks;
  if (g.best_interval_s) marks.push_back({*g.best_interval_s, "best of the sweep: " + format_duration(*g.best_interval_s), "best"});
  if (g.young_s) marks.push_back({*g.young_s, "Young: " + format_duration(*g.young_s), "Young"});
  if (g.daly_s) marks.push_back({*g.daly_s, "Daly: " + format_duration(*g.daly_s), "Daly"});
  std::string caption = "Checkpoint interval swept: the share of wall time lost at each interval (the expected "
                        "value of the model, not one trial)";
  if (g.best_interval_s && g.young_s && g.daly_s)
    caption += "; best " + format_duration(*g.best_interval_s) + ", Young " + format_duration(*g.young_s) + ", Daly " +
               format_duration(*g.daly_s) + " (their assumptions: Poisson failures, fixed costs, restart in place)";
  return html_paragraph(caption + ".") + line_chart("Time lost vs checkpoint interval", "checkpoint interval",
                                                    "time lost", {line}, std::nullopt, duration, percent, marks);
}

}  // namespace

std::string goodput_section(const ReportInputs& in) {
  if (!in.goodput) return "";
  const GoodputSummary& g = *in.goodput;
  std::string cards;
  cards += html_card("goodput (95% CI)", with_interval(g.goodput, percent));
  cards += html_card("effective tokens/s", with_interval(g.tokens_per_s, tokens_per_s));
  cards += html_card("failure-free tokens/s", tokens_per_s(g.failure_free_tokens_per_s));
  cards += html_card("failures per trial", printf_string("%.2f", g.failures.mean));
  cards += html_card("horizon", format_duration(g.horizon_s) + ", " + std::to_string(g.trials) + " trials");
  if (!g.policy.empty()) cards += html_card("policy", g.policy);
  if (g.checkpoint_interval_s > 0) cards += html_card("checkpoint every", format_duration(g.checkpoint_interval_s));
  if (g.train_wall_s && g.train_tokens && g.train_failure_free_s)
    cards += html_card(printf_string("time to train %.3g tokens", *g.train_tokens),
                       with_interval(*g.train_wall_s, duration) + " (failure-free " +
                           format_duration(*g.train_failure_free_s) + ")");
  std::string body = "<div class=\"cards\">" + cards + "</div>";
  body += html_paragraph(g.scenario + " on " + std::to_string(g.devices) + " devices, failures from " +
                         (g.failure_source.empty() ? std::string("the scenario") : g.failure_source) + ".");
  body += timeline_chart(g) + time_chart(g) + sweep_chart(g);
  return html_section("goodput", "Goodput over the horizon", body);
}

}  // namespace tandem::report
