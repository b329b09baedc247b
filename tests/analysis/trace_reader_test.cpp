// Reading traces back: every field of every record is type- and range-checked, and each error
// names the file, the line of the field and its path ("records[1].rank"); a number that would
// wrap when narrowed, a non-regular file and a number beyond double are refused, not read.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "analysis/json_locate.hpp"
#include "analysis/trace.hpp"
#include "common/input_error.hpp"
#include "tests/analysis/temp_dir_test_base.hpp"
#include "tests/analysis/trace_builders.hpp"

namespace tandem::analysis_test {
namespace {

// A trace as the former schema, tandem-trace/1, wrote it (one object per record, keys sorted,
// one-space indents): files written before tandem-trace/2 must still read.
std::string v1_text(const Trace& trace) {
  nlohmann::json records = nlohmann::json::array();
  for (const auto& r : trace.records)
    records.push_back({{"rank", r.rank}, {"iteration", r.iteration}, {"op_id", r.op_id}, {"kind", to_string(r.kind)},
                       {"phase", to_string(r.phase)}, {"stream", to_string(r.stream)}, {"start_s", r.start_s},
                       {"end_s", r.end_s}, {"flops", r.flops}, {"bytes", r.bytes}, {"peer", r.peer},
                       {"group_id", r.group_id}, {"group_size", r.group_size}});
  return nlohmann::json{{"schema", "tandem-trace/1"}, {"source", trace.source}, {"scenario", trace.scenario},
                        {"records", records}}
      .dump(1);
}

// Reading a good trace's text with one edit: the InputError it raises, and the edited text's lines.
class TraceErrorTest : public TempDirTest {
 protected:
  // `text` with the first `from` at or after byte `start` replaced by `to`.
  InputError error_in(std::string text, std::size_t start, const std::string& from, const std::string& to) {
    const auto at = start == std::string::npos ? start : text.find(from, start);
    if (at == std::string::npos) {
      ADD_FAILURE() << "not in the good trace: " << from;
      return InputError("", 0, "", "");
    }
    text.replace(at, from.size(), to);
    bad_text_ = text;
    const std::string bad = write_text("bad.json", text);
    try {
      read_trace_json(bad);
    } catch (const InputError& e) {
      EXPECT_EQ(e.file(), bad);
      return e;
    }
    ADD_FAILURE() << "no InputError after " << to;
    return InputError("", 0, "", "");
  }
  int line_of(const std::string& needle) const {
    const auto at = bad_text_.find(needle);
    return 1 + static_cast<int>(std::count(bad_text_.begin(), bad_text_.begin() + static_cast<long>(at), '\n'));
  }
  std::string bad_text_;
};

class TraceReader : public TraceErrorTest {
 protected:
  // A good two-record tandem-trace/1 file, with `from` replaced by `to` in the second record.
  InputError error_after(const std::string& from, const std::string& to) {
    const std::string text = v1_text(trace_of("sim", {gemm(0, 0, "a", 0, 1), gemm(1, 0, "b", 0, 2)}));
    return error_in(text, text.rfind('{', text.find("\"op_id\": \"b\"")), from, to);
  }
};

TEST_F(TraceReader, ARankThatWouldWrapNamesItsRecordLineAndField) {
  const InputError e = error_after("\"rank\": 1", "\"rank\": 4294967296");
  EXPECT_EQ(e.field(), "records[1].rank");
  EXPECT_EQ(e.line(), line_of("4294967296"));
}

TEST_F(TraceReader, EachMalformedFieldIsAnErrorAtItsPath) {
  struct Case {
    std::string from, to, field;
  };
  for (const Case& c : std::vector<Case>{{"\"rank\": 1", "\"rank\": -1", "records[1].rank"},
                                         {"\"rank\": 1", "\"rank\": 1.5", "records[1].rank"},
                                         {"\"iteration\": 0", "\"iteration\": \"0\"", "records[1].iteration"},
                                         {"\"kind\": \"gemm\"", "\"kind\": \"gemmm\"", "records[1].kind"},
                                         {"\"end_s\": 2.0", "\"end_s\": 1e300", "records[1].end_s"},
                                         {"\"flops\": 0.0", "\"flops\": -5", "records[1].flops"},
                                         {"\"peer\": -1", "\"peer\": 99999999999999", "records[1].peer"},
                                         {"\"group_size\": 0", "\"group_size\": [1]", "records[1].group_size"},
                                         {"\"op_id\": \"b\"", "\"op_id\": 7", "records[1].op_id"}}) {
    const InputError e = error_after(c.from, c.to);
    EXPECT_EQ(e.field(), c.field) << c.to << ": " << e.what();
    EXPECT_GT(e.line(), 1) << c.to << ": " << e.what();
  }
}

TEST_F(TraceReader, AFieldGivenTwiceIsRefusedAtItsSecondLine) {
  const InputError e = error_after("\"rank\": 1", "\"rank\": 1,\n \"rank\": 7");
  EXPECT_EQ(e.field(), "records[1].rank");
  EXPECT_EQ(e.line(), line_of("\"rank\": 7"));
}

TEST_F(TraceReader, ASyntaxErrorNamesItsRecordAndField) {
  const InputError e = error_after("\"end_s\": 2.0", "\"end_s\": 2.0.1");
  EXPECT_EQ(e.field(), "records[1].end_s");
  EXPECT_EQ(e.line(), line_of("2.0.1"));
}

TEST_F(TraceReader, AMissingFieldIsReportedAtItsRecord) {
  const InputError e = error_after("\"kind\": \"gemm\",", "");  // keys are written sorted: kind is not last
  EXPECT_EQ(e.field(), "records[1].kind");
  EXPECT_GT(e.line(), 1);
}

TEST_F(TraceReader, ANumberBeyondDoubleAndATopLevelListAreInputErrors) {
  for (const char* text : {"{\"schema\": \"tandem-trace/1\", \"records\": [], \"x\": 1e400}", "[1, 2]", "{\"schema\": 5}"}) {
    const std::string p = write_text("odd.json", text);
    EXPECT_THROW(read_trace_json(p), InputError) << text;
  }
}

TEST_F(TraceReader, ADeviceIsRefusedNotRead) {
  try {
    read_trace_json("/dev/zero");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("not a regular file"), std::string::npos) << e.what();
  }
}

// ---- tandem-trace/2 ----

Trace mixed_trace() {
  Trace t = trace_of("sim", {gemm(0, 0, "fwd.l0.qkv", 0.5, 1.25e-3 + 0.5), all_reduce(1, 0, "grads", 1, 2)});
  TraceRecord send = op(1, 1, "pp.send", OpKind::send, Stream::pp_send, 2, 2.000004);
  send.peer = 0;
  send.bytes = 4194304;
  t.records.push_back(send);
  t.records[0].flops = 3.4359738368e10;
  t.records[0].phase = Phase::backward;
  t.ranks = {{"H100-SXM", "h100", 0}, {"A100-SXM-80GB", "a100", 1}};
  return t;
}

TEST_F(TraceReader, TheCompactSchemaReadsBackEveryFieldAndWhereRanksRan) {
  const Trace written = mixed_trace();
  const std::string p = path("v2.json");
  write_trace_json(written, p);
  const Trace read = read_trace_json(p);
  EXPECT_EQ(read.source, written.source);
  EXPECT_EQ(read.scenario, written.scenario);
  ASSERT_EQ(read.records.size(), written.records.size());
  for (std::size_t i = 0; i < read.records.size(); ++i) {
    const TraceRecord &a = written.records[i], &b = read.records[i];
    EXPECT_EQ(b.rank, a.rank);
    EXPECT_EQ(b.iteration, a.iteration);
    EXPECT_EQ(b.op_id, a.op_id);
    EXPECT_EQ(b.kind, a.kind);
    EXPECT_EQ(b.phase, a.phase);
    EXPECT_EQ(b.stream, a.stream);
    EXPECT_NEAR(b.start_s, a.start_s, 1e-9) << "kept to the nanosecond";
    EXPECT_NEAR(b.end_s, a.end_s, 1e-9);
    EXPECT_EQ(b.flops, a.flops) << "whole counts are exact";
    EXPECT_EQ(b.bytes, a.bytes);
    EXPECT_EQ(b.peer, a.peer);
    EXPECT_EQ(b.group_id, a.group_id);
    EXPECT_EQ(b.group_size, a.group_size);
  }
  ASSERT_EQ(read.ranks.size(), 2u);
  EXPECT_EQ(read.ranks[1].device, "A100-SXM-80GB");
  EXPECT_EQ(read.ranks[1].group, "a100");
  EXPECT_EQ(read.ranks[1].node, 1);
}

TEST_F(TraceReader, ATraceOfTheFormerSchemaStillReads) {
  const Trace written = mixed_trace();
  const Trace read = read_trace_json(write_text("v1.json", v1_text(written)));
  ASSERT_EQ(read.records.size(), written.records.size());
  EXPECT_EQ(read.records[2].peer, 0);
  EXPECT_EQ(read.records[0].start_s, 0.5);
}

TEST_F(TraceReader, TheCompactSchemaIsSeveralTimesSmallerThanTheFormer) {
  // A realistic mix: times that are not round, FLOPs of real GEMMs, op ids repeated over ranks.
  Trace t = trace_of("sim", {});
  for (int rank = 0; rank < 16; ++rank)
    for (int i = 0; i < 200; ++i) {
      TraceRecord r = gemm(rank, 0, "layer" + std::to_string(i % 40) + ".mlp.fc" + std::to_string(i / 40), i * 1.3e-4 / 7,
                           (i + 1) * 1.3e-4 / 7);
      r.flops = 2.0 * 4096 * 4096 * 8192;
      r.bytes = 3.0 * 4096 * 8192 * 2;
      t.records.push_back(r);
    }
  const std::size_t v1 = v1_text(t).size(), v2 = trace_json(t).size();
  EXPECT_LT(v2 * 4, v1) << "v1 " << v1 << " bytes, v2 " << v2 << " bytes";
}

class CompactTraceReader : public TraceErrorTest {
 protected:
  // The mixed trace in tandem-trace/2 with the first `from` after `after` replaced by `to`.
  InputError error_after(const std::string& after, const std::string& from, const std::string& to) {
    const std::string text = trace_json(mixed_trace());
    return error_in(text, text.find(after), from, to);
  }
};

TEST_F(CompactTraceReader, EachBadColumnNamesItsRecordLineAndColumn) {
  struct Case {
    std::string from, to, field;
  };
  // The second record is "[1,0,1,...": rank 1, iteration 0, op 1 (grads), kind, phase, stream...
  for (const Case& c : std::vector<Case>{{"[1,0,1,", "[1,0,9,", "records[1].op"},
                                         {"[1,0,1,", "[-1,0,1,", "records[1].rank"},
                                         {"[1,0,1,", "[1,0.5,1,", "records[1].iteration"},
                                         {"[1,0,1,10,", "[1,0,1,99,", "records[1].kind"},
                                         {"[1,0,1,", "[1,0,\"grads\",", "records[1].op"},
                                         {"[1,0,1,", "[1,0,1,0,0,0,5,-3,0,0],[", "records[1].dur_ns"},
                                         {"[1,0,1,", "[1,0,1,0,0,0,5,3,0],[", "records[1]"},
                                         {"[1,0,1,", "[1,0,1,0,0,0,5,3,-2,0],[", "records[1].flops"},
                                         {"[1,0,1,", "[1,0,1,0,0,0,5,3,0,0,-1,-1,99999999999],[",
                                          "records[1].group_size"}}) {
    const InputError e = error_after("\"records\"", c.from, c.to);
    EXPECT_EQ(e.field(), c.field) << c.to << ": " << e.what();
    EXPECT_EQ(e.line(), line_of(c.to)) << c.to << ": " << e.what();
  }
}

TEST_F(CompactTraceReader, AnUnknownNameInATableIsRefusedAtItsEntry) {
  const InputError e = error_after("\"kinds\"", "\"gemm\"", "\"gemmm\"");
  EXPECT_EQ(e.field(), "kinds[0]");
  const InputError s = error_after("\"schema\"", "tandem-trace/2", "tandem-trace/3");
  EXPECT_EQ(s.field(), "schema");
}

TEST(JsonLocate, FindsTheLineOfAFieldPath) {
  const std::string text = "{\n \"a\": 1,\n \"records\": [\n  {\"x\": \"[{\\\"\"},\n  {\n   \"rank\": 3\n  }\n ]\n}\n";
  EXPECT_EQ(json_line_of(text, "a"), 2);
  EXPECT_EQ(json_line_of(text, "records[0]"), 4);
  EXPECT_EQ(json_line_of(text, "records[1].rank"), 6);
  EXPECT_EQ(json_line_of(text, "records[1].missing"), 5) << "the enclosing object";
  EXPECT_EQ(json_line_of(text, "records[7]"), 3) << "the enclosing list";
}

}  // namespace
}  // namespace tandem::analysis_test
