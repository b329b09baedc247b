// Reading traces back: every field of every record is type- and range-checked, and each error
// names the file, the line of the field and its path ("records[1].rank"); a number that would
// wrap when narrowed, a non-regular file and a number beyond double are refused, not read.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>

#include "analysis/json_locate.hpp"
#include "analysis/trace.hpp"
#include "common/input_error.hpp"
#include "tests/analysis/temp_dir_test_base.hpp"
#include "tests/analysis/trace_builders.hpp"

namespace tandem::analysis_test {
namespace {

class TraceReader : public TempDirTest {
 protected:
  // A good two-record trace as written by write_trace_json, with `from` replaced by `to` in the
  // second record.
  InputError error_after(const std::string& from, const std::string& to) {
    const std::string good = path("good.json");
    write_trace_json(trace_of("sim", {gemm(0, 0, "a", 0, 1), gemm(1, 0, "b", 0, 2)}), good);
    std::ifstream in(good);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto record = text.rfind('{', text.find("\"op_id\": \"b\""));
    const auto at = text.find(from, record);
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
