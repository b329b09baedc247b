#include "analysis/chrome_trace.hpp"

#include <nlohmann/json.hpp>

#include <set>

namespace tandem {

std::string chrome_trace_json(const Trace& trace) {
  nlohmann::json events = nlohmann::json::array();
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
                      {"pid", r.rank},
                      {"tid", static_cast<int>(r.stream)},
                      {"ts", r.start_s * 1e6},
                      {"dur", (r.end_s - r.start_s) * 1e6},
                      {"args", std::move(args)}});
  }
  // Name processes and threads so the timeline reads "rank 3 / dp_comm".
  for (int rank : ranks)
    events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", rank},
                      {"args", {{"name", "rank " + std::to_string(rank)}}}});
  for (auto [rank, stream] : threads)
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", rank}, {"tid", stream},
                      {"args", {{"name", to_string(static_cast<Stream>(stream))}}}});
  nlohmann::json doc = {{"traceEvents", std::move(events)},
                        {"displayTimeUnit", "ms"},
                        {"otherData", {{"source", trace.source}, {"scenario", trace.scenario}}}};
  return doc.dump();
}

void write_chrome_trace(const Trace& trace, const std::string& path) {
  write_file_atomically(path, chrome_trace_json(trace));
}

}  // namespace tandem
