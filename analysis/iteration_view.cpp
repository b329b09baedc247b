#include "analysis/iteration_view.hpp"

#include <algorithm>
#include <numeric>

namespace tandem {

std::vector<IterationSpan> iteration_spans(const Trace& trace) {
  std::map<int, IterationSpan> spans;
  for (const auto& r : trace.records) {
    auto [it, fresh] = spans.try_emplace(r.iteration, IterationSpan{r.iteration, r.start_s, r.end_s});
    if (!fresh) {
      it->second.start_s = std::min(it->second.start_s, r.start_s);
      it->second.end_s = std::max(it->second.end_s, r.end_s);
    }
  }
  std::vector<IterationSpan> out;
  for (const auto& [iteration, span] : spans) out.push_back(span);
  return out;
}

std::vector<Seconds> iteration_periods_s(const std::vector<IterationSpan>& spans) {
  std::vector<Seconds> periods;
  for (std::size_t i = 0; i < spans.size(); ++i)
    periods.push_back(spans[i].end_s - (i == 0 ? spans[i].start_s : spans[i - 1].end_s));
  return periods;
}

Seconds mean_iteration_period_s(const std::vector<IterationSpan>& spans) {
  // The periods add up to the last end less the first start.
  if (spans.empty()) return 0;
  return (spans.back().end_s - spans.front().start_s) / static_cast<double>(spans.size());
}

Trace relative_to_iteration_start(const Trace& trace) {
  std::map<int, Seconds> start_s;
  for (const auto& span : iteration_spans(trace)) start_s[span.iteration] = span.start_s;
  Trace out = trace;
  for (auto& r : out.records) {
    const Seconds origin_s = start_s.at(r.iteration);
    r.start_s -= origin_s;
    r.end_s -= origin_s;
  }
  return out;
}

std::string OpKey::display() const {
  return occurrence == 0 ? op_id : op_id + "#" + std::to_string(occurrence + 1);
}

std::vector<OpKey> op_keys(const Trace& trace) {
  // Occurrences are numbered in order of start (then end, then record order), so the numbering
  // does not depend on how a backend happened to order its records.
  std::vector<std::size_t> order(trace.records.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const auto& ra = trace.records[a];
    const auto& rb = trace.records[b];
    return std::tie(ra.start_s, ra.end_s) < std::tie(rb.start_s, rb.end_s);
  });
  std::map<OpKey, int> seen;  // key with occurrence 0 → occurrences so far
  std::vector<OpKey> keys(trace.records.size());
  for (std::size_t i : order) {
    const auto& r = trace.records[i];
    OpKey key{r.rank, r.iteration, r.op_id, 0};
    key.occurrence = seen[key]++;
    keys[i] = std::move(key);
  }
  return keys;
}

Trace fold_to_mean_iteration(const Trace& trace, int iteration) {
  const Trace relative = relative_to_iteration_start(trace);
  const std::vector<OpKey> keys = op_keys(relative);
  struct Sum {
    TraceRecord first;
    Seconds start_s = 0, end_s = 0;
    int count = 0;
  };
  std::map<OpKey, Sum> sums;  // keyed without the iteration
  std::vector<OpKey> order;   // first appearance, so the output keeps the trace's order
  for (std::size_t i = 0; i < relative.records.size(); ++i) {
    OpKey key = keys[i];
    key.iteration = iteration;
    auto [it, fresh] = sums.try_emplace(key);
    if (fresh) it->second.first = relative.records[i], order.push_back(key);
    it->second.start_s += relative.records[i].start_s;
    it->second.end_s += relative.records[i].end_s;
    ++it->second.count;
  }
  Trace out{trace.source, trace.scenario, {}, trace.ranks};
  out.records.reserve(order.size());
  for (const auto& key : order) {
    const Sum& s = sums.at(key);
    TraceRecord r = s.first;
    r.iteration = iteration;
    r.start_s = s.start_s / s.count;
    r.end_s = std::max(r.start_s, s.end_s / s.count);
    out.records.push_back(std::move(r));
  }
  return out;
}

Trace median_iteration(const Trace& trace) {
  std::vector<IterationSpan> spans = iteration_spans(trace);
  if (spans.empty()) return Trace{trace.source, trace.scenario, {}, trace.ranks};
  std::stable_sort(spans.begin(), spans.end(),
                   [](const IterationSpan& a, const IterationSpan& b) { return a.duration_s() < b.duration_s(); });
  const IterationSpan& median = spans[(spans.size() - 1) / 2];
  Trace out{trace.source, trace.scenario, {}, trace.ranks};
  for (const auto& r : trace.records) {
    if (r.iteration != median.iteration) continue;
    out.records.push_back(r);
    out.records.back().start_s -= median.start_s;
    out.records.back().end_s -= median.start_s;
  }
  return out;
}

Trace drop_iterations_before(const Trace& trace, int first_iteration) {
  Trace out{trace.source, trace.scenario, {}, trace.ranks};
  for (const auto& r : trace.records)
    if (r.iteration >= first_iteration) out.records.push_back(r);
  return out;
}

}  // namespace tandem
