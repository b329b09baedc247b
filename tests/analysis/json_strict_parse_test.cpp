// Strict JSON parsing (analysis/json_strict_parse.hpp): what nlohmann takes silently (a key
// given twice, the last winning) or throws without a position (a number beyond a double) is
// refused at its field path, line and byte; a syntax error names the field the parser stood in.
#include <gtest/gtest.h>

#include <optional>
#include <stdexcept>

#include "analysis/json_strict_parse.hpp"

namespace tandem {
namespace {

struct Refused {
  JsonRefusal refusal;
};

// The refusal of `text`, or nothing when it parses.
std::optional<JsonRefusal> refusal_of(const std::string& text) {
  try {
    parse_json_strictly(text, [](const JsonRefusal& r) { throw Refused{r}; });
  } catch (const Refused& r) {
    return r.refusal;
  }
  return std::nullopt;
}

TEST(JsonStrictParse, AKeyGivenTwiceIsRefusedWhereItIsGivenAgain) {
  const std::string text = "{\n \"records\": [\n  {\"rank\": 1},\n  {\"rank\": 1,\n   \"rank\": 7}\n ]\n}\n";
  const auto r = refusal_of(text);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->field, "records[1].rank");
  EXPECT_EQ(r->line, 5);
  EXPECT_EQ(text.substr(r->byte, 1), "7") << "the byte of the second value";
  EXPECT_NE(r->message.find("twice"), std::string::npos) << r->message;
}

TEST(JsonStrictParse, ATopLevelKeyGivenTwiceIsRefused) {
  const auto r = refusal_of("{\"schema\": \"tandem-trace/1\", \"schema\": \"x\"}");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->field, "schema");
}

TEST(JsonStrictParse, TheSameKeyInTwoObjectsIsFine) {
  EXPECT_FALSE(refusal_of("{\"a\": {\"k\": 1}, \"b\": {\"k\": 2}, \"c\": [{\"k\": 1}, {\"k\": 2}]}").has_value());
  EXPECT_FALSE(refusal_of("[[{\"k\": 1, \"j\": {\"k\": 2}}], {\"k\": 3}]").has_value());
}

TEST(JsonStrictParse, ANumberBeyondADoubleIsRefusedAtItsField) {
  const auto r = refusal_of("{\"records\": [1,\n 2,\n 1e400]}");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->field, "records[2]");
  EXPECT_EQ(r->line, 3);
}

TEST(JsonStrictParse, ASyntaxErrorNamesTheFieldTheParserStoodIn) {
  const std::string text = "{\"records\": [{\"rank\": 1}, {\"rank\": 2, \"end_s\": ]}";
  const auto r = refusal_of(text);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->field, "records[1].end_s");
  EXPECT_EQ(text[r->byte], ']');
  EXPECT_EQ(r->line, 1);

  const auto truncated = refusal_of("{\"records\": [{\"rank\": 1}, {\"ra");
  ASSERT_TRUE(truncated.has_value());
  EXPECT_EQ(truncated->field, "records[1]") << "an object before its first key";

  const auto empty = refusal_of("");
  ASSERT_TRUE(empty.has_value());
  EXPECT_EQ(empty->field, "");
}

TEST(JsonStrictParse, AValidDocumentParsesToTheSameValueAsNlohmann) {
  const std::string text = "{\"b\": [1, 2.5, \"x\", null, true, {\"c\": []}], \"a\": {}}";
  nlohmann::json parsed = parse_json_strictly(text, [](const JsonRefusal&) { throw std::logic_error("refused"); });
  EXPECT_EQ(parsed, nlohmann::json::parse(text));
}

}  // namespace
}  // namespace tandem
