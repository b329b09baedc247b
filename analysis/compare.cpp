#include "analysis/compare.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <set>
#include <sstream>

#include "analysis/format.hpp"
#include "common/input_error.hpp"

namespace tandem {

std::optional<double> TimeTotals::error() const {
  if (measured_s <= 0) return std::nullopt;
  return (predicted_s - measured_s) / measured_s;
}

const char* to_string(IterationAlignment alignment) {
  switch (alignment) {
    case IterationAlignment::automatic: return "automatic";
    case IterationAlignment::by_iteration: return "by_iteration";
    case IterationAlignment::mean_iteration: return "mean_iteration";
  }
  return "?";
}

namespace {

std::set<int> iteration_numbers(const Trace& trace) {
  std::set<int> out;
  for (const auto& r : trace.records) out.insert(r.iteration);
  return out;
}

Trace without_warmup(const Trace& trace, int warmup_iterations) {
  const std::set<int> iterations = iteration_numbers(trace);
  if (warmup_iterations <= 0 || iterations.empty()) return trace;
  if (warmup_iterations >= static_cast<int>(iterations.size())) return Trace{trace.source, trace.scenario, {}, trace.ranks};
  return drop_iterations_before(trace, *std::next(iterations.begin(), warmup_iterations));
}

TraceSummary summarize(const Trace& trace, const Trace& mean_iteration) {
  TraceSummary s;
  s.source = trace.source;
  s.scenario = trace.scenario;
  s.records = static_cast<int>(trace.records.size());
  s.iterations = iteration_spans(trace);
  s.iteration_time_s = mean_iteration_period_s(s.iterations);
  for (const auto& r : mean_iteration.records) s.rank_finish_s[r.rank] = std::max(s.rank_finish_s[r.rank], r.end_s);
  s.critical_path = critical_path(mean_iteration.records);
  return s;
}

UnmatchedOp unmatched(const OpKey& key, const TraceRecord& r) {
  return {key, r.kind, r.stream, r.end_s - r.start_s};
}

void add(TimeTotals& totals, Seconds predicted_s, Seconds measured_s) {
  totals.predicted_s += predicted_s;
  totals.measured_s += measured_s;
  ++totals.ops;
}

}  // namespace

Comparison compare_traces(const Trace& predicted_in, const Trace& measured_in, const CompareOptions& options) {
  const Trace& predicted = predicted_in;
  const Trace measured = without_warmup(measured_in, options.measured_warmup_iterations);
  Comparison c;
  c.alignment = options.alignment;
  if (c.alignment == IterationAlignment::automatic)
    c.alignment = iteration_numbers(predicted) == iteration_numbers(measured) ? IterationAlignment::by_iteration
                                                                             : IterationAlignment::mean_iteration;
  const Trace predicted_mean = fold_to_mean_iteration(predicted);
  const Trace measured_mean = fold_to_mean_iteration(measured);
  c.predicted = summarize(predicted, predicted_mean);
  c.measured = summarize(measured, measured_mean);
  c.measured_anomalies = find_anomalies(measured);
  if (c.measured.iteration_time_s > 0)
    c.iteration_time_error = (c.predicted.iteration_time_s - c.measured.iteration_time_s) / c.measured.iteration_time_s;

  const bool by_iteration = c.alignment == IterationAlignment::by_iteration;
  const Trace p = by_iteration ? relative_to_iteration_start(predicted) : predicted_mean;
  const Trace m = by_iteration ? relative_to_iteration_start(measured) : measured_mean;
  c.aligned_iterations = by_iteration ? static_cast<int>(iteration_numbers(p).size()) : 1;
  const std::vector<OpKey> p_keys = op_keys(p);
  const std::vector<OpKey> m_keys = op_keys(m);
  std::map<OpKey, std::size_t> measured_index;
  for (std::size_t i = 0; i < m_keys.size(); ++i) measured_index.emplace(m_keys[i], i);

  std::vector<bool> measured_matched(m.records.size(), false);
  std::vector<OpDifference> differences;
  for (std::size_t i = 0; i < p.records.size(); ++i) {
    const TraceRecord& pr = p.records[i];
    auto found = measured_index.find(p_keys[i]);
    if (found == measured_index.end()) {
      c.predicted_only.push_back(unmatched(p_keys[i], pr));
      continue;
    }
    measured_matched[found->second] = true;
    const TraceRecord& mr = m.records[found->second];
    const Seconds p_s = pr.end_s - pr.start_s;
    const Seconds m_s = mr.end_s - mr.start_s;
    // Grouped by the predicted op's kind and stream (a backend may file an op differently).
    add(c.matched, p_s, m_s);
    add(c.by_kind[pr.kind], p_s, m_s);
    add(c.by_rank[pr.rank], p_s, m_s);
    add(c.by_stream[pr.stream], p_s, m_s);
    differences.push_back({p_keys[i], pr.kind, pr.stream, p_s, m_s});
  }
  for (std::size_t i = 0; i < m.records.size(); ++i)
    if (!measured_matched[i]) c.measured_only.push_back(unmatched(m_keys[i], m.records[i]));
  c.matched_ops = c.matched.ops;

  // Totals per iteration.
  const double per_iteration = 1.0 / std::max(1, c.aligned_iterations);
  auto scale = [&](TimeTotals& t) { t.predicted_s *= per_iteration, t.measured_s *= per_iteration; };
  scale(c.matched);
  for (auto& [k, t] : c.by_rank) scale(t);
  for (auto& [k, t] : c.by_kind) scale(t);
  for (auto& [k, t] : c.by_stream) scale(t);

  const std::size_t n = std::min(options.largest_differences, differences.size());
  std::partial_sort(differences.begin(), differences.begin() + static_cast<std::ptrdiff_t>(n), differences.end(),
                    [](const OpDifference& a, const OpDifference& b) {
                      const double da = std::fabs(a.difference_s()), db = std::fabs(b.difference_s());
                      return da != db ? da > db : a.key < b.key;
                    });
  differences.resize(n);
  c.largest_differences = std::move(differences);
  return c;
}

Comparison compare_trace_files(const std::string& predicted_path, const std::string& measured_path,
                               const CompareOptions& options) {
  const Trace predicted = read_trace_json(predicted_path);
  const Trace measured = read_trace_json(measured_path);
  for (const auto& [path, trace] : {std::pair{predicted_path, &predicted}, std::pair{measured_path, &measured}})
    if (trace->records.empty()) throw InputError(path, 0, "records", "the trace holds no op");
  const int measured_iterations = static_cast<int>(iteration_numbers(measured).size());
  if (options.measured_warmup_iterations >= measured_iterations)
    throw InputError(measured_path, 0, "records",
                     "holds " + std::to_string(measured_iterations) + " iteration(s); cannot leave out " +
                         std::to_string(options.measured_warmup_iterations) + " as warm-up");
  Comparison c = compare_traces(predicted, measured, options);
  if (c.matched_ops == 0)
    throw InputError(measured_path, 0, "records",
                     "no op matches the predicted trace " + predicted_path + " by (rank, iteration, op id)");
  c.predicted.file = predicted_path;
  c.measured.file = measured_path;
  if (!predicted.scenario.empty() && !measured.scenario.empty() && predicted.scenario != measured.scenario)
    c.warnings.push_back("the traces name different scenarios (predicted '" + predicted.scenario + "', measured '" +
                         measured.scenario + "'); compared by their matching ops all the same");
  return c;
}

// ---- JSON ----

namespace {

nlohmann::json optional_number(std::optional<double> v) {
  return v && std::isfinite(*v) ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

nlohmann::json to_json(const TimeTotals& t) {
  return {{"predicted_s", t.predicted_s}, {"measured_s", t.measured_s}, {"difference_s", t.difference_s()},
          {"error", optional_number(t.error())}, {"ops", t.ops}};
}

template <class Key, class Name>
nlohmann::json groups_to_json(const std::map<Key, TimeTotals>& groups, const char* key_name, Name name) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [key, totals] : groups) {
    nlohmann::json j = to_json(totals);
    j[key_name] = name(key);
    out.push_back(std::move(j));
  }
  return out;
}

nlohmann::json key_to_json(const OpKey& key) {
  return {{"rank", key.rank}, {"iteration", key.iteration}, {"op_id", key.display()}};
}

nlohmann::json unmatched_to_json(const std::vector<UnmatchedOp>& ops) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& op : ops) {
    nlohmann::json j = key_to_json(op.key);
    j["kind"] = to_string(op.kind), j["stream"] = to_string(op.stream), j["duration_s"] = op.duration_s;
    out.push_back(std::move(j));
  }
  return out;
}

nlohmann::json path_to_json(const CriticalPath& path) {
  nlohmann::json by_kind = nlohmann::json::object();
  for (const auto& [kind, s] : path.busy_by_kind_s) by_kind[to_string(kind)] = s;
  nlohmann::json steps = nlohmann::json::array();
  for (const auto& step : path.steps)
    steps.push_back({{"rank", step.op.rank}, {"stream", to_string(step.op.stream)}, {"op_id", step.op.op_id},
                     {"kind", to_string(step.op.kind)}, {"start_s", step.op.start_s}, {"end_s", step.op.end_s},
                     {"gap_before_s", step.gap_before_s}, {"reached_by", to_string(step.reached_by)}});
  return {{"length_s", path.length_s}, {"busy_s", path.busy_s}, {"gap_s", path.gap_s},
          {"busy_by_kind_s", std::move(by_kind)}, {"steps", std::move(steps)}};
}

nlohmann::json side_to_json(const TraceSummary& s) {
  nlohmann::json iterations = nlohmann::json::array();
  for (const auto& span : s.iterations)
    iterations.push_back({{"iteration", span.iteration}, {"duration_s", span.duration_s()}});
  nlohmann::json finish = nlohmann::json::array();
  for (const auto& [rank, t] : s.rank_finish_s) finish.push_back({{"rank", rank}, {"finish_s", t}});
  return {{"file", s.file}, {"source", s.source}, {"scenario", s.scenario}, {"records", s.records},
          {"iterations", std::move(iterations)}, {"iteration_time_s", s.iteration_time_s},
          {"rank_finish_s", std::move(finish)}, {"critical_path", path_to_json(s.critical_path)}};
}

}  // namespace

nlohmann::json to_json(const Comparison& c) {
  nlohmann::json largest = nlohmann::json::array();
  for (const auto& d : c.largest_differences) {
    nlohmann::json j = key_to_json(d.key);
    j["kind"] = to_string(d.kind), j["stream"] = to_string(d.stream);
    j["predicted_s"] = d.predicted_s, j["measured_s"] = d.measured_s, j["difference_s"] = d.difference_s();
    largest.push_back(std::move(j));
  }
  return {
      {"schema", "tandem-compare/1"},
      {"alignment", to_string(c.alignment)},
      {"aligned_iterations", c.aligned_iterations},
      {"predicted", side_to_json(c.predicted)},
      {"measured", side_to_json(c.measured)},
      {"iteration_time",
       {{"predicted_s", c.predicted.iteration_time_s},
        {"measured_s", c.measured.iteration_time_s},
        {"difference_s", c.predicted.iteration_time_s - c.measured.iteration_time_s},
        {"error", optional_number(c.iteration_time_error)}}},
      {"matched_ops", c.matched_ops},
      {"matched", to_json(c.matched)},
      {"by_kind", groups_to_json(c.by_kind, "kind", [](OpKind k) { return to_string(k); })},
      {"by_rank", groups_to_json(c.by_rank, "rank", [](int r) { return r; })},
      {"by_stream", groups_to_json(c.by_stream, "stream", [](Stream s) { return to_string(s); })},
      {"unmatched",
       {{"predicted_only_count", c.predicted_only.size()},
        {"measured_only_count", c.measured_only.size()},
        {"predicted_only", unmatched_to_json(c.predicted_only)},
        {"measured_only", unmatched_to_json(c.measured_only)}}},
      {"largest_differences", std::move(largest)},
      {"measured_anomalies", to_json(c.measured_anomalies)},
      {"warnings", c.warnings},
  };
}

// ---- text ----

namespace {

std::string iteration_list(const std::vector<IterationSpan>& spans) {
  if (spans.empty()) return "none";
  std::string out = std::to_string(spans.front().iteration);
  if (spans.size() > 1) out += "-" + std::to_string(spans.back().iteration);
  return out + " (" + std::to_string(spans.size()) + ")";
}

void print_totals_row(std::ostream& out, const std::string& name, const TimeTotals& t) {
  out << "  " << std::left << std::setw(16) << name << std::right << std::setw(13) << human_seconds(t.predicted_s)
      << std::setw(13) << human_seconds(t.measured_s) << std::setw(14) << human_seconds(t.difference_s())
      << std::setw(10) << signed_percent(t.error()) << std::setw(7) << t.ops << "\n";
}

template <class Key, class Name>
void print_group(std::ostream& out, const char* title, const std::map<Key, TimeTotals>& groups, Name name) {
  out << std::left << std::setw(18) << title << std::right << std::setw(13) << "predicted" << std::setw(13)
      << "measured" << std::setw(14) << "difference" << std::setw(10) << "error" << std::setw(7) << "ops" << "\n";
  for (const auto& [key, totals] : groups) print_totals_row(out, name(key), totals);
}

void print_path(std::ostream& out, const char* side, const CriticalPath& path) {
  out << "critical path (" << side << "): " << human_seconds(path.length_s) << " = busy "
      << human_seconds(path.busy_s) << " + gaps " << human_seconds(path.gap_s) << " over " << path.steps.size()
      << " ops\n    busy by kind:";
  std::vector<std::pair<Seconds, OpKind>> kinds;
  for (const auto& [kind, s] : path.busy_by_kind_s) kinds.push_back({s, kind});
  std::sort(kinds.rbegin(), kinds.rend());
  for (const auto& [s, kind] : kinds) out << " " << to_string(kind) << " " << human_seconds(s) << ";";
  std::set<int> ranks;
  int rendezvous = 0;
  for (const auto& step : path.steps) ranks.insert(step.op.rank), rendezvous += step.reached_by == PathLink::rendezvous;
  out << "\n    crosses " << ranks.size() << " rank(s) through " << rendezvous << " rendezvous; ends with "
      << (path.steps.empty() ? std::string("nothing") : path.steps.back().op.op_id + " on rank " +
                                                            std::to_string(path.steps.back().op.rank))
      << "\n";
}

void print_unmatched(std::ostream& out, const char* side, const std::vector<UnmatchedOp>& ops) {
  constexpr std::size_t kListed = 10;
  out << "only in the " << side << " trace: " << ops.size() << " op(s)\n";
  for (std::size_t i = 0; i < std::min(kListed, ops.size()); ++i)
    out << "  rank " << ops[i].key.rank << " iteration " << ops[i].key.iteration << "  " << ops[i].key.display()
        << " (" << to_string(ops[i].kind) << ", " << human_seconds(ops[i].duration_s) << ")\n";
  if (ops.size() > kListed) out << "  ... and " << ops.size() - kListed << " more (all in --json)\n";
}

}  // namespace

std::string to_text(const Comparison& c) {
  std::ostringstream out;
  auto side_line = [&](const char* name, const TraceSummary& s) {
    out << std::left << std::setw(12) << name << (s.file.empty() ? std::string("(in memory)") : s.file) << "  ["
        << s.source << ", " << s.records << " records, iterations " << iteration_list(s.iterations) << "]\n";
  };
  for (const std::string& warning : c.warnings) out << "warning     " << warning << "\n";
  side_line("predicted", c.predicted);
  side_line("measured", c.measured);
  out << "alignment   " << to_string(c.alignment) << " (" << c.aligned_iterations << " aligned iteration(s))\n";
  out << "iteration   predicted " << human_seconds(c.predicted.iteration_time_s) << ", measured "
      << human_seconds(c.measured.iteration_time_s) << ": error " << signed_percent(c.iteration_time_error)
      << "  (error = (predicted - measured) / measured)\n";
  out << "matched     " << c.matched_ops << " ops; " << c.predicted_only.size() << " only predicted, "
      << c.measured_only.size() << " only measured\n\n";
  out << "per iteration, matched ops only:\n";
  print_group(out, "by op kind", c.by_kind, [](OpKind k) { return std::string(to_string(k)); });
  print_group(out, "by rank", c.by_rank, [](int r) { return "rank " + std::to_string(r); });
  print_group(out, "by stream", c.by_stream, [](Stream s) { return std::string(to_string(s)); });
  print_totals_row(out, "all matched", c.matched);
  out << "\n";
  print_path(out, "predicted", c.predicted.critical_path);
  print_path(out, "measured", c.measured.critical_path);
  out << "\nlargest differences (predicted - measured, per op):\n";
  for (const auto& d : c.largest_differences)
    out << "  " << std::setw(14) << human_seconds(d.difference_s()) << "  rank " << d.key.rank << " it "
        << d.key.iteration << "  " << d.key.display() << " (" << to_string(d.kind) << ", " << to_string(d.stream)
        << "): predicted " << human_seconds(d.predicted_s) << ", measured " << human_seconds(d.measured_s) << "\n";
  if (!c.predicted_only.empty() || !c.measured_only.empty()) {
    out << "\n";
    print_unmatched(out, "predicted", c.predicted_only);
    print_unmatched(out, "measured", c.measured_only);
  }
  out << "\nanomalies in the measured trace (compute against peers of the same device and stage):\n"
      << to_text(c.measured_anomalies);
  return out.str();
}

}  // namespace tandem
