// Reading a trace file (schemas tandem-trace/1 and /2, analysis/trace.hpp) back: every field of
// every record type- and range-checked, each error naming the file, the record's line and its
// field path ("records[3].rank"), so compare and report never work on a wrapped or absurd value.
#include <limits>
#include <string>
#include <unordered_map>

#include "analysis/json_file.hpp"
#include "analysis/json_locate.hpp"
#include "analysis/trace.hpp"
#include "common/input_error.hpp"
#include "common/input_limits.hpp"

namespace tandem {

namespace {

constexpr const char* kSchemaV1 = "tandem-trace/1";
constexpr const char* kSchemaV2 = "tandem-trace/2";

// Times and sizes a trace may hold: a simulated iteration of up to ~30 years, and FLOPs or bytes
// of one op up to 1e30 (far above any kernel; what matters is that sums stay finite).
constexpr double kMaxTimeS = 1e9;
constexpr double kMaxOpWork = 1e30;
constexpr long long kMaxIteration = limits::kIterations.max + limits::kWarmupIterations.max;
constexpr long long kMaxRank = limits::kMaxClusterDevices - 1;
constexpr long long kMaxGroupId = 1LL << 30;

// ---- tandem-trace/1: one object per record ----

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
  TraceRecord r;
  r.rank = static_cast<int>(j.whole("rank", 0, kMaxRank));
  r.iteration = static_cast<int>(j.whole("iteration", 0, kMaxIteration));
  r.op_id = j.string("op_id");
  r.kind = parse_enum<OpKind, kOpKindCount>(j, "kind", to_string);
  r.phase = parse_enum<Phase, kPhaseCount>(j, "phase", to_string);
  r.stream = parse_enum<Stream, kStreamCount>(j, "stream", to_string);
  r.start_s = bounded(j, "start_s", -kMaxTimeS, kMaxTimeS);
  r.end_s = bounded(j, "end_s", -kMaxTimeS, kMaxTimeS);
  if (r.end_s < r.start_s) j.fail("end_s", "ends before it starts");
  r.flops = bounded(j, "flops", 0, kMaxOpWork);
  r.bytes = bounded(j, "bytes", 0, kMaxOpWork);
  r.peer = static_cast<int>(j.whole("peer", -1, kMaxRank));
  r.group_id = static_cast<int>(j.whole("group_id", -1, kMaxGroupId));
  r.group_size = static_cast<int>(j.whole("group_size", 0, limits::kMaxClusterDevices));
  return r;
}

// ---- tandem-trace/2: name tables, and one array per record ----

// A name table of the file mapped to the reader's enum: the file's index -> the enum value, so a
// file written by a build whose enums were ordered otherwise still reads right.
template <class Enum, int Count>
std::vector<Enum> enum_table(const JsonFields& doc, const char* key, const char* (*name)(Enum)) {
  std::vector<Enum> table;
  const nlohmann::json& names = doc.array(key);
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string field = std::string(key) + "[" + std::to_string(i) + "]";
    if (!names[i].is_string()) doc.fail(field, "expected a name");
    bool found = false;
    for (int e = 0; e < Count && !found; ++e) {
      if (names[i].get<std::string>() == name(static_cast<Enum>(e))) {
        table.push_back(static_cast<Enum>(e));
        found = true;
      }
    }
    if (!found) doc.fail(field, "unknown " + std::string(key) + " name '" + names[i].get<std::string>() + "'");
  }
  return table;
}

class RowReader {
 public:
  RowReader(const JsonInput& input, std::size_t index)
      : input_(input), path_("records[" + std::to_string(index) + "]"), row_(input.root["records"][index]) {
    if (!row_.is_array() || (row_.size() != 10 && row_.size() != 13))
      fail("", "expected a list of 10 or 13 numbers (the columns)");
  }
  long long whole(std::size_t column, const char* name, long long lowest, long long highest) const {
    const nlohmann::json& v = row_[column];
    if (!v.is_number_integer()) fail(name, "expected a whole number");
    // Above the signed range JSON numbers read as unsigned: checked as such, never wrapped.
    const bool too_large = v.is_number_unsigned() && v.get<unsigned long long>() > static_cast<unsigned long long>(highest);
    const long long n = too_large ? highest : v.get<long long>();
    if (too_large || n < lowest || n > highest)
      fail(name, "must be between " + std::to_string(lowest) + " and " + std::to_string(highest));
    return n;
  }
  double number(std::size_t column, const char* name, double highest) const {
    const nlohmann::json& v = row_[column];
    if (!v.is_number()) fail(name, "expected a number");
    const double n = v.get<double>();
    if (!(n >= 0 && n <= highest)) fail(name, "must be between 0 and " + std::to_string(highest));
    return n;
  }
  bool has_peer_and_group() const { return row_.size() == 13; }
  [[noreturn]] void fail(const std::string& column, const std::string& message) const {
    throw InputError(input_.file, json_line_of(input_.text, path_), column.empty() ? path_ : path_ + "." + column,
                     message);
  }

 private:
  const JsonInput& input_;
  std::string path_;
  const nlohmann::json& row_;
};

template <class T>
T from_table(const RowReader& row, std::size_t column, const char* name, const std::vector<T>& table) {
  return table[static_cast<std::size_t>(row.whole(column, name, 0, static_cast<long long>(table.size()) - 1))];
}

Trace read_v2(const JsonInput& input, const JsonFields& doc) {
  Trace trace;
  trace.source = doc.optional_string("source");
  trace.scenario = doc.optional_string("scenario");
  const auto kinds = enum_table<OpKind, kOpKindCount>(doc, "kinds", to_string);
  const auto phases = enum_table<Phase, kPhaseCount>(doc, "phases", to_string);
  const auto streams = enum_table<Stream, kStreamCount>(doc, "streams", to_string);
  std::vector<std::string> ops;
  const nlohmann::json& op_names = doc.array("ops");
  for (std::size_t i = 0; i < op_names.size(); ++i) {
    if (!op_names[i].is_string()) doc.fail("ops[" + std::to_string(i) + "]", "expected an op id");
    ops.push_back(op_names[i].get<std::string>());
  }
  if (doc.has("ranks")) {
    for (std::size_t i = 0; i < doc.array("ranks").size(); ++i) {
      const JsonFields rank = doc.element("ranks", i);
      TraceRank r{rank.string("device"), rank.string("group"),
                  static_cast<int>(rank.whole("node", -1, limits::kMaxClusterDevices))};
      auto role = [&](const char* key, long long highest) { return rank.has(key) ? rank.whole(key, 0, highest) : -1; };
      r.stage = static_cast<int>(role("stage", limits::kMaxClusterDevices));
      r.replica = static_cast<int>(role("replica", limits::kMaxClusterDevices));
      r.layers = static_cast<int>(role("layers", std::numeric_limits<int>::max()));
      r.sequences = role("sequences", std::numeric_limits<long long>::max() / 2);
      trace.ranks.push_back(std::move(r));
    }
  }
  const std::size_t count = doc.array("records").size();
  trace.records.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    const RowReader row(input, i);
    TraceRecord r;
    r.rank = static_cast<int>(row.whole(0, "rank", 0, kMaxRank));
    r.iteration = static_cast<int>(row.whole(1, "iteration", 0, kMaxIteration));
    r.op_id = from_table(row, 2, "op", ops);
    r.kind = from_table(row, 3, "kind", kinds);
    r.phase = from_table(row, 4, "phase", phases);
    r.stream = from_table(row, 5, "stream", streams);
    constexpr long long kMaxNs = static_cast<long long>(kMaxTimeS * 1e9);
    const long long start_ns = row.whole(6, "start_ns", -kMaxNs, kMaxNs);
    const long long dur_ns = row.whole(7, "dur_ns", 0, kMaxNs);
    r.start_s = static_cast<double>(start_ns) / 1e9;
    r.end_s = static_cast<double>(start_ns + dur_ns) / 1e9;
    r.flops = row.number(8, "flops", kMaxOpWork);
    r.bytes = row.number(9, "bytes", kMaxOpWork);
    if (row.has_peer_and_group()) {
      r.peer = static_cast<int>(row.whole(10, "peer", -1, kMaxRank));
      r.group_id = static_cast<int>(row.whole(11, "group_id", -1, kMaxGroupId));
      r.group_size = static_cast<int>(row.whole(12, "group_size", 0, limits::kMaxClusterDevices));
    }
    trace.records.push_back(std::move(r));
  }
  return trace;
}

}  // namespace

Trace read_trace_json(const std::string& path) {
  const JsonInput input = read_json_input(path, kMaxTraceBytes);
  if (!input.root.is_object()) throw InputError(path, 1, "(top level)", "expected an object (a tandem-trace file)");
  const JsonFields doc(input);
  const std::string schema = doc.optional_string("schema");
  if (schema == kSchemaV2) return read_v2(input, doc);
  if (schema != kSchemaV1)
    doc.fail("schema", std::string("expected \"") + kSchemaV2 + "\" (or the former \"" + kSchemaV1 + "\")");
  Trace trace;
  trace.source = doc.optional_string("source");
  trace.scenario = doc.optional_string("scenario");
  const std::size_t count = doc.array("records").size();
  trace.records.reserve(count);
  for (std::size_t i = 0; i < count; ++i) trace.records.push_back(read_record(doc.element("records", i)));
  return trace;
}

}  // namespace tandem
