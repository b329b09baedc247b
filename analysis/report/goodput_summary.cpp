#include "analysis/report/goodput_summary.hpp"

#include "analysis/json_file.hpp"
#include "common/input_limits.hpp"

namespace tandem::report {

namespace {

// {"mean", "ci95_low", "ci95_high"}, the interval around its mean.
Interval95 interval(const JsonFields& parent, const char* key) {
  const JsonFields e = parent.object(key);
  Interval95 i{e.number("mean"), e.number("ci95_low"), e.number("ci95_high")};
  if (!(i.low <= i.mean && i.mean <= i.high)) e.fail("mean", "must lie within [ci95_low, ci95_high]");
  return i;
}

Seconds non_negative(const JsonFields& object, const char* key) {
  const double v = object.number(key);
  if (v < 0) object.fail(key, "must not be negative");
  return v;
}

}  // namespace

GoodputSummary read_goodput_json(const std::string& path) {
  const JsonInput input = read_json_input(path);
  const JsonFields doc(input);
  GoodputSummary g;
  g.file = path;
  g.document = input.root.dump();
  g.scenario = doc.string("scenario");
  g.policy = doc.optional_string("policy");
  g.devices = static_cast<int>(doc.whole("devices", 1, limits::kMaxClusterDevices));
  g.horizon_s = non_negative(doc, "horizon_s");
  if (g.horizon_s <= 0) doc.fail("horizon_s", "must be positive");
  g.trials = static_cast<int>(doc.whole("trials", 1, 1LL << 30));
  g.goodput = interval(doc, "goodput");
  if (!(g.goodput.low >= 0 && g.goodput.high <= 1))
    doc.object("goodput").fail(g.goodput.low < 0 ? "ci95_low" : "ci95_high", "a share: must lie within [0, 1]");
  g.tokens_per_s = interval(doc, "effective_tokens_per_s");
  g.failures = interval(doc, "failures_per_trial");
  g.failure_free_tokens_per_s = non_negative(doc, "failure_free_tokens_per_s");
  if (doc.has("iteration_s")) g.iteration_s = non_negative(doc, "iteration_s");
  if (doc.has("failure_profile")) {
    const JsonFields f = doc.object("failure_profile");
    g.failure_source = f.optional_string("name");
    const std::string source = f.optional_string("source");
    if (!source.empty()) g.failure_source += " (" + source + ")";
  }
  if (doc.has("checkpoint")) g.checkpoint_interval_s = non_negative(doc.object("checkpoint"), "interval_s");

  // Mean seconds per trial, each within the horizon.
  const JsonFields time = doc.object("time_s");
  const auto within_horizon = [&](const JsonFields& object, const char* key) {
    const Seconds s = non_negative(object, key);
    if (s > g.horizon_s * (1 + 1e-9)) object.fail(key, "longer than the horizon (horizon_s)");
    return s;
  };
  g.time_s["useful"] = within_horizon(time, "useful");
  for (const char* part : {"checkpoint", "degraded", "slowed", "regrow"})
    if (time.has(part)) g.time_s[part] = within_horizon(time, part);
  if (time.has("by_cause")) {
    const JsonFields causes = time.object("by_cause");
    for (const auto& item : causes.json().items()) {
      const JsonFields c = causes.object(item.key().c_str());
      g.by_cause[item.key()] = {within_horizon(c, "lost_work"), within_horizon(c, "restart"), within_horizon(c, "waiting")};
    }
  }

  if (doc.has("timeline")) {
    for (std::size_t i = 0; i < doc.array("timeline").size(); ++i) {
      const JsonFields p = doc.element("timeline", i);
      GoodputStep step{non_negative(p, "t_s"), p.string("state"), non_negative(p, "throughput"),
                       static_cast<int>(p.whole("failures", 0, 1LL << 30))};
      if (!g.timeline.empty() && step.t_s < g.timeline.back().t_s) p.fail("t_s", "the timeline must go forward in time");
      if (step.t_s > g.horizon_s) p.fail("t_s", "beyond the horizon (horizon_s)");
      g.timeline.push_back(std::move(step));
    }
  }

  if (doc.has("sweep")) {
    const JsonFields s = doc.object("sweep");
    g.best_interval_s = s.optional_number("best_interval_s");
    g.young_s = s.optional_number("young_s");
    g.daly_s = s.optional_number("daly_s");
    if (s.has("points"))
      for (std::size_t i = 0; i < s.array("points").size(); ++i) {
        const JsonFields p = s.element("points", i);
        g.sweep.push_back({non_negative(p, "interval_s"), non_negative(p, "goodput")});
        if (g.sweep.back().goodput > 1) p.fail("goodput", "a share: must lie within [0, 1]");
      }
  }
  if (doc.has("time_to_train")) {
    const JsonFields t = doc.object("time_to_train");
    g.train_tokens = non_negative(t, "tokens");
    g.train_failure_free_s = non_negative(t, "failure_free_s");
    g.train_wall_s = interval(t, "wall_s");
  }
  return g;
}

}  // namespace tandem::report
