#include "analysis/trace.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <unistd.h>

#include "analysis/json_file.hpp"
#include "common/input_error.hpp"

namespace tandem {

namespace {
constexpr const char* kSchema = "tandem-trace/1";

template <class Enum, int Count>
Enum enum_from_string(const std::string& text, const char* (*name)(Enum), bool& ok) {
  for (int i = 0; i < Count; ++i) {
    if (text == name(static_cast<Enum>(i))) {
      ok = true;
      return static_cast<Enum>(i);
    }
  }
  ok = false;
  return Enum{};
}
}  // namespace

std::string trace_json(const Trace& trace) {
  nlohmann::json records = nlohmann::json::array();
  for (const auto& r : trace.records) {
    records.push_back({{"rank", r.rank},
                       {"iteration", r.iteration},
                       {"op_id", r.op_id},
                       {"kind", to_string(r.kind)},
                       {"phase", to_string(r.phase)},
                       {"stream", to_string(r.stream)},
                       {"start_s", r.start_s},
                       {"end_s", r.end_s},
                       {"flops", r.flops},
                       {"bytes", r.bytes},
                       {"peer", r.peer},
                       {"group_id", r.group_id},
                       {"group_size", r.group_size}});
  }
  nlohmann::json doc = {{"schema", kSchema},
                        {"source", trace.source},
                        {"scenario", trace.scenario},
                        {"records", std::move(records)}};
  return doc.dump(1);
}

void write_trace_json(const Trace& trace, const std::string& path) { write_file_atomically(path, trace_json(trace)); }

TraceRecord op_trace_record(int rank, int iteration, const std::string& label, OpKind kind, Phase phase,
                            Stream stream, Seconds start_s, Seconds end_s, Bytes bytes) {
  TraceRecord r;
  r.rank = rank;
  r.iteration = iteration;
  r.op_id = label;
  r.kind = kind;
  r.phase = phase;
  r.stream = stream;
  r.start_s = start_s;
  r.end_s = end_s;
  r.bytes = bytes;
  return r;
}

TraceRecord op_trace_record(int rank, int iteration, const ComputeOp& op, Stream stream, Seconds start_s,
                            Seconds end_s) {
  TraceRecord r = op_trace_record(rank, iteration, op.label, op.kind, op.phase, stream, start_s, end_s, op.bytes);
  r.flops = op.flops;
  return r;
}

TraceRecord op_trace_record(int rank, int iteration, const CommOp& op, Stream stream, Seconds start_s,
                            Seconds end_s) {
  TraceRecord r = op_trace_record(rank, iteration, op.label, op.kind, op.phase, stream, start_s, end_s, op.bytes);
  if (is_collective(op.kind)) {
    r.group_id = op.group.id;
    r.group_size = op.group.size();
  } else {
    r.peer = op.peer;
  }
  return r;
}

}  // namespace tandem
