#include "analysis/chrome_trace.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <set>

#include "common/gzip.hpp"

namespace tandem {

namespace {

// Where a trace's ops go in the timeline: a process and a thread per (rank, stream), and their names.
struct Placement {
  int pid = -1;  // -1: one process per rank (pid = rank), one thread per stream
  std::string process_name;
  int pid_of(int rank) const { return pid < 0 ? rank : pid; }
  int tid_of(int rank, Stream stream) const {
    return pid < 0 ? static_cast<int>(stream) : rank * kStreamCount + static_cast<int>(stream);
  }
  std::string thread_name(int rank, Stream stream) const {
    return pid < 0 ? to_string(stream) : "rank " + std::to_string(rank) + " / " + to_string(stream);
  }
};

// Microseconds to the nanosecond: the timeline's resolution, and a short number to print (the
// full double took 17 digits per time, a third of the file).
double microseconds(Seconds s) { return static_cast<double>(std::llround(s * 1e9)) / 1e3; }
double microseconds_between(Seconds start, Seconds end) {
  return static_cast<double>(std::llround(end * 1e9) - std::llround(start * 1e9)) / 1e3;
}

// FLOPs and bytes are whole numbers: printed as such ("25165824", not "25165824.0").
nlohmann::json count(double v) {
  return v == std::floor(v) && v < 9e18 ? nlohmann::json(static_cast<std::int64_t>(v)) : nlohmann::json(v);
}

// "rank 3: H100-SXM, node 0 (h100), stage 1" when the trace knows where the rank ran.
std::string rank_name(const Trace& trace, int rank) {
  std::string name = "rank " + std::to_string(rank);
  if (rank < static_cast<int>(trace.ranks.size())) {
    const TraceRank& where = trace.ranks[rank];
    name += ": " + where.device + ", node " + std::to_string(where.node) + " (" + where.group + ")";
    if (where.stage >= 0) name += ", stage " + std::to_string(where.stage);
  }
  return name;
}

void append_events(nlohmann::json& events, const Trace& trace, const Placement& place) {
  std::set<int> ranks;
  std::set<std::pair<int, int>> threads;
  const bool several_iterations =
      std::any_of(trace.records.begin(), trace.records.end(),
                  [&](const TraceRecord& r) { return r.iteration != trace.records.front().iteration; });
  for (const auto& r : trace.records) {
    ranks.insert(r.rank);
    threads.insert({r.rank, static_cast<int>(r.stream)});
    // Only what the name, category and lane do not say already: one key less per op is ~10%.
    nlohmann::json args = nlohmann::json::object();
    if (several_iterations) args["iteration"] = r.iteration;
    if (r.flops > 0) args["flops"] = count(r.flops);
    if (r.bytes > 0) args["bytes"] = count(r.bytes);
    if (r.peer >= 0) args["peer"] = r.peer;
    if (r.group_id >= 0) args["group"] = r.group_id, args["group_size"] = r.group_size;
    nlohmann::json event = {{"name", r.op_id},
                            {"cat", to_string(r.kind)},
                            {"ph", "X"},
                            {"pid", place.pid_of(r.rank)},
                            {"tid", place.tid_of(r.rank, r.stream)},
                            {"ts", microseconds(r.start_s)},
                            {"dur", microseconds_between(r.start_s, r.end_s)}};
    if (!args.empty()) event["args"] = std::move(args);
    events.push_back(std::move(event));
  }
  // Name processes and threads so the timeline reads "rank 3: H100-SXM, node 0 (h100)" / "dp_comm".
  if (place.pid < 0) {
    for (int rank : ranks) {
      events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", rank},
                        {"args", {{"name", rank_name(trace, rank)}}}});
      events.push_back({{"name", "process_sort_index"}, {"ph", "M"}, {"pid", rank},
                        {"args", {{"sort_index", rank}}}});
    }
  } else {
    events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", place.pid},
                      {"args", {{"name", place.process_name}}}});
    events.push_back({{"name", "process_sort_index"}, {"ph", "M"}, {"pid", place.pid},
                      {"args", {{"sort_index", place.pid}}}});
  }
  for (auto [rank, stream] : threads) {
    const Stream s = static_cast<Stream>(stream);
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", place.pid_of(rank)},
                      {"tid", place.tid_of(rank, s)}, {"args", {{"name", place.thread_name(rank, s)}}}});
  }
}

}  // namespace

std::string chrome_trace_json(const Trace& trace) {
  nlohmann::json events = nlohmann::json::array();
  append_events(events, trace, Placement{});
  nlohmann::json doc = {{"traceEvents", std::move(events)},
                        {"displayTimeUnit", "ms"},
                        {"otherData", {{"source", trace.source}, {"scenario", trace.scenario}}}};
  return doc.dump();
}

void write_chrome_trace(const Trace& trace, const std::string& path) {
  write_file_atomically(path, gzipped_if_named(path, chrome_trace_json(trace)));
}

std::string chrome_trace_pair_json(const Trace& predicted, const Trace& measured) {
  nlohmann::json events = nlohmann::json::array();
  append_events(events, predicted, Placement{kPredictedPid, "predicted (" + predicted.source + ")"});
  append_events(events, measured, Placement{kMeasuredPid, "measured (" + measured.source + ")"});
  nlohmann::json doc = {{"traceEvents", std::move(events)},
                        {"displayTimeUnit", "ms"},
                        {"otherData", {{"predicted_source", predicted.source}, {"measured_source", measured.source},
                                       {"scenario", measured.scenario.empty() ? predicted.scenario : measured.scenario}}}};
  return doc.dump();
}

void write_chrome_trace_pair(const Trace& predicted, const Trace& measured, const std::string& path) {
  write_file_atomically(path, gzipped_if_named(path, chrome_trace_pair_json(predicted, measured)));
}

}  // namespace tandem
