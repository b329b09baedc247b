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

Trace read_trace_json(const std::string& path) {
  const nlohmann::json doc = read_json_file(path);
  auto field_error = [&](const std::string& field, const std::string& msg) {
    throw InputError(path, 0, field, msg);
  };
  if (!doc.is_object() || doc.value("schema", "") != kSchema)
    field_error("schema", std::string("expected \"") + kSchema + "\"");
  Trace trace;
  trace.source = doc.value("source", "");
  trace.scenario = doc.value("scenario", "");
  if (!doc.contains("records") || !doc["records"].is_array()) field_error("records", "expected a list");
  const auto& records = doc["records"];
  trace.records.reserve(records.size());
  for (std::size_t i = 0; i < records.size(); ++i) {
    const auto& j = records[i];
    const std::string at = "records[" + std::to_string(i) + "].";
    auto need = [&](const char* key, auto check, const char* what) -> const nlohmann::json& {
      if (!j.is_object() || !j.contains(key) || !check(j[key])) field_error(at + key, std::string("expected ") + what);
      return j[key];
    };
    auto is_num = [](const nlohmann::json& v) { return v.is_number(); };
    auto is_int = [](const nlohmann::json& v) { return v.is_number_integer(); };
    auto is_str = [](const nlohmann::json& v) { return v.is_string(); };
    TraceRecord r;
    r.rank = need("rank", is_int, "an integer").get<int>();
    r.iteration = need("iteration", is_int, "an integer").get<int>();
    r.op_id = need("op_id", is_str, "a string").get<std::string>();
    bool ok = false;
    r.kind = enum_from_string<OpKind, kOpKindCount>(need("kind", is_str, "a string").get<std::string>(), to_string, ok);
    if (!ok) field_error(at + "kind", "unknown op kind");
    r.phase = enum_from_string<Phase, 4>(need("phase", is_str, "a string").get<std::string>(), to_string, ok);
    if (!ok) field_error(at + "phase", "unknown phase");
    r.stream = enum_from_string<Stream, kStreamCount>(need("stream", is_str, "a string").get<std::string>(), to_string, ok);
    if (!ok) field_error(at + "stream", "unknown stream");
    r.start_s = need("start_s", is_num, "a number").get<double>();
    r.end_s = need("end_s", is_num, "a number").get<double>();
    if (r.end_s < r.start_s) field_error(at + "end_s", "ends before it starts");
    r.flops = need("flops", is_num, "a number").get<double>();
    r.bytes = need("bytes", is_num, "a number").get<double>();
    r.peer = need("peer", is_int, "an integer").get<int>();
    r.group_id = need("group_id", is_int, "an integer").get<int>();
    r.group_size = need("group_size", is_int, "an integer").get<int>();
    trace.records.push_back(std::move(r));
  }
  return trace;
}

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
