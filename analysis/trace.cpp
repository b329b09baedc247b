#include "analysis/trace.hpp"

#include <nlohmann/json.hpp>

#include <charconv>
#include <cmath>
#include <unordered_map>

#include "common/gzip.hpp"

namespace tandem {

namespace {

void append_number(std::string& out, long long value) {
  char text[24];
  out.append(text, std::to_chars(text, text + sizeof text, value).ptr);
}

// The shortest text that reads back as the same double: FLOP and byte counts are whole numbers
// and print as such ("525336576", not "525336576.0").
void append_number(std::string& out, double value) {
  char text[32];
  out.append(text, std::to_chars(text, text + sizeof text, value).ptr);
}

void append_string(std::string& out, const std::string& text) { out += nlohmann::json(text).dump(); }

template <class Enum>
void append_names(std::string& out, const char* key, int count, const char* (*name)(Enum)) {
  out += ",\n\"" + std::string(key) + "\":[";
  for (int i = 0; i < count; ++i) {
    if (i > 0) out += ',';
    append_string(out, name(static_cast<Enum>(i)));
  }
  out += ']';
}

long long nanoseconds(Seconds s) { return std::llround(s * 1e9); }

}  // namespace

std::string trace_json(const Trace& trace) {
  // Op ids in order of first appearance, each written once.
  std::unordered_map<std::string, long long> op_index;
  std::string ops;
  for (const auto& r : trace.records) {
    if (op_index.try_emplace(r.op_id, static_cast<long long>(op_index.size())).second) {
      if (!ops.empty()) ops += ",\n";
      append_string(ops, r.op_id);
    }
  }
  std::string out = "{\"schema\":\"tandem-trace/2\",\"source\":";
  append_string(out, trace.source);
  out += ",\"scenario\":";
  append_string(out, trace.scenario);
  append_names<OpKind>(out, "kinds", kOpKindCount, to_string);
  append_names<Phase>(out, "phases", kPhaseCount, to_string);
  append_names<Stream>(out, "streams", kStreamCount, to_string);
  out += ",\n\"ops\":[\n" + ops + "]";
  if (!trace.ranks.empty()) {
    out += ",\n\"ranks\":[";
    for (std::size_t i = 0; i < trace.ranks.size(); ++i) {
      out += i > 0 ? ",\n{\"device\":" : "\n{\"device\":";
      append_string(out, trace.ranks[i].device);
      out += ",\"group\":";
      append_string(out, trace.ranks[i].group);
      out += ",\"node\":";
      append_number(out, static_cast<long long>(trace.ranks[i].node));
      const TraceRank& rank = trace.ranks[i];
      for (const auto& [key, value] : {std::pair{"stage", static_cast<long long>(rank.stage)},
                                       std::pair{"replica", static_cast<long long>(rank.replica)},
                                       std::pair{"layers", static_cast<long long>(rank.layers)},
                                       std::pair{"sequences", rank.sequences}}) {
        if (value < 0) continue;
        out += std::string(",\"") + key + "\":";
        append_number(out, value);
      }
      out += '}';
    }
    out += ']';
  }
  out += ",\n\"columns\":[\"rank\",\"iteration\",\"op\",\"kind\",\"phase\",\"stream\",\"start_ns\",\"dur_ns\","
         "\"flops\",\"bytes\",\"peer\",\"group_id\",\"group_size\"],\n\"records\":[";
  out.reserve(out.size() + trace.records.size() * 48);
  bool first = true;
  for (const auto& r : trace.records) {
    out += first ? "\n[" : ",\n[";
    first = false;
    const long long start = nanoseconds(r.start_s);
    for (long long v : {static_cast<long long>(r.rank), static_cast<long long>(r.iteration), op_index.at(r.op_id),
                        static_cast<long long>(r.kind), static_cast<long long>(r.phase),
                        static_cast<long long>(r.stream), start, nanoseconds(r.end_s) - start}) {
      append_number(out, v);
      out += ',';
    }
    append_number(out, r.flops);
    out += ',';
    append_number(out, r.bytes);
    if (r.peer != -1 || r.group_id != -1 || r.group_size != 0) {
      for (int v : {r.peer, r.group_id, r.group_size}) {
        out += ',';
        append_number(out, static_cast<long long>(v));
      }
    }
    out += ']';
  }
  out += "\n]}\n";
  return out;
}

void write_trace_json(const Trace& trace, const std::string& path) {
  write_file_atomically(path, gzipped_if_named(path, trace_json(trace)));
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
