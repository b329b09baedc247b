#include "analysis/chrome_trace.hpp"

#include <nlohmann/json.hpp>

#include <set>

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

void append_events(nlohmann::json& events, const Trace& trace, const Placement& place) {
  std::set<int> ranks;
  std::set<std::pair<int, int>> threads;
  for (const auto& r : trace.records) {
    ranks.insert(r.rank);
    threads.insert({r.rank, static_cast<int>(r.stream)});
    nlohmann::json args = {{"iteration", r.iteration}, {"phase", to_string(r.phase)},
                           {"flops", r.flops}, {"bytes", r.bytes}};
    if (r.peer >= 0) args["peer"] = r.peer;
    if (r.group_id >= 0) args["group"] = r.group_id, args["group_size"] = r.group_size;
    events.push_back({{"name", r.op_id},
                      {"cat", to_string(r.kind)},
                      {"ph", "X"},
                      {"pid", place.pid_of(r.rank)},
                      {"tid", place.tid_of(r.rank, r.stream)},
                      {"ts", r.start_s * 1e6},
                      {"dur", (r.end_s - r.start_s) * 1e6},
                      {"args", std::move(args)}});
  }
  // Name processes and threads so the timeline reads "rank 3 / dp_comm".
  if (place.pid < 0) {
    for (int rank : ranks)
      events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", rank},
                        {"args", {{"name", "rank " + std::to_string(rank)}}}});
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
  write_file_atomically(path, chrome_trace_json(trace));
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
  write_file_atomically(path, chrome_trace_pair_json(predicted, measured));
}

}  // namespace tandem
