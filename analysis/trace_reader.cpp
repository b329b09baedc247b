// Reading a trace file (schema tandem-trace/1, analysis/trace.hpp) back: every field of every
// record type- and range-checked, each error naming the file, the record's line and its field
// path ("records[3].rank"), so compare and report never work on a wrapped or absurd value.
#include <string>

#include "analysis/json_file.hpp"
#include "analysis/trace.hpp"
#include "common/input_error.hpp"
#include "common/input_limits.hpp"

namespace tandem {

namespace {

constexpr const char* kSchema = "tandem-trace/1";

// Times and sizes a trace may hold: a simulated iteration of up to ~30 years, and FLOPs or bytes
// of one op up to 1e30 (far above any kernel; what matters is that sums stay finite).
constexpr double kMaxTimeS = 1e9;
constexpr double kMaxOpWork = 1e30;
constexpr long long kMaxIteration = limits::kIterations.max + limits::kWarmupIterations.max;

// The enum value whose name is `text`, by the enum's own to_string.
template <class Enum, int Count>
Enum parse_enum(const JsonFields& record, const char* key, const char* (*name)(Enum)) {
  const std::string text = record.string(key);
  for (int i = 0; i < Count; ++i)
    if (text == name(static_cast<Enum>(i))) return static_cast<Enum>(i);
  record.fail(key, "unknown " + std::string(key) + " '" + text + "'");
}

double bounded(const JsonFields& record, const char* key, double lowest, double highest) {
  const double v = record.number(key);
  if (v < lowest || v > highest)
    record.fail(key, "must be between " + std::to_string(lowest) + " and " + std::to_string(highest));
  return v;
}

TraceRecord read_record(const JsonFields& j) {
  const long long max_rank = limits::kMaxClusterDevices - 1;
  TraceRecord r;
  r.rank = static_cast<int>(j.whole("rank", 0, max_rank));
  r.iteration = static_cast<int>(j.whole("iteration", 0, kMaxIteration));
  r.op_id = j.string("op_id");
  r.kind = parse_enum<OpKind, kOpKindCount>(j, "kind", to_string);
  r.phase = parse_enum<Phase, 4>(j, "phase", to_string);
  r.stream = parse_enum<Stream, kStreamCount>(j, "stream", to_string);
  r.start_s = bounded(j, "start_s", -kMaxTimeS, kMaxTimeS);
  r.end_s = bounded(j, "end_s", -kMaxTimeS, kMaxTimeS);
  if (r.end_s < r.start_s) j.fail("end_s", "ends before it starts");
  r.flops = bounded(j, "flops", 0, kMaxOpWork);
  r.bytes = bounded(j, "bytes", 0, kMaxOpWork);
  r.peer = static_cast<int>(j.whole("peer", -1, max_rank));
  r.group_id = static_cast<int>(j.whole("group_id", -1, 1LL << 30));
  r.group_size = static_cast<int>(j.whole("group_size", 0, limits::kMaxClusterDevices));
  return r;
}

}  // namespace

Trace read_trace_json(const std::string& path) {
  const JsonInput input = read_json_input(path, kMaxTraceBytes);
  if (!input.root.is_object()) throw InputError(path, 1, "(top level)", "expected an object (a tandem-trace/1 file)");
  const JsonFields doc(input);
  if (doc.optional_string("schema") != kSchema) doc.fail("schema", std::string("expected \"") + kSchema + "\"");
  Trace trace;
  trace.source = doc.optional_string("source");
  trace.scenario = doc.optional_string("scenario");
  const std::size_t count = doc.array("records").size();
  trace.records.reserve(count);
  for (std::size_t i = 0; i < count; ++i) trace.records.push_back(read_record(doc.element("records", i)));
  return trace;
}

}  // namespace tandem
