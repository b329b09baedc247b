// What yaml-cpp accepts silently and Tandem must refuse, each as one InputError naming the file,
// the line and the field: a key given twice, a key that is not a name, a second document.
#include <gtest/gtest.h>

#include "common/yaml_reader.hpp"

namespace tandem {
namespace {

InputError parse_error(const std::string& text) {
  try {
    YamlNode::load_string(text, "in.yaml");
  } catch (const InputError& e) {
    return e;
  }
  ADD_FAILURE() << "expected an InputError for:\n" << text;
  return InputError("", 0, "", "");
}

TEST(YamlDocument, ADuplicateKeyIsRefusedWithBothLines) {
  const InputError e = parse_error("name: a\ncluster: localhost\nmodel: x\ncluster: no-such-cluster\n");
  EXPECT_EQ(e.line(), 4);
  EXPECT_EQ(e.field(), "cluster");
  EXPECT_NE(std::string(e.what()).find("first at line 2"), std::string::npos) << e.what();
}

TEST(YamlDocument, ADuplicateKeyDeepInsideIsRefusedAtItsPath) {
  const InputError e = parse_error("training:\n  lr: 1\n  sub: [ {a: 1, a: 2} ]\n");
  EXPECT_EQ(e.line(), 3);
  EXPECT_EQ(e.field(), "training.sub[0].a");
}

TEST(YamlDocument, TheSameKeyInTwoMappingsIsFine) {
  EXPECT_NO_THROW(YamlNode::load_string("a: {x: 1}\nb: {x: 2}\nc: [{x: 1}, {x: 2}]\n", "in.yaml"));
}

TEST(YamlDocument, ASecondDocumentIsRefusedAtItsFirstKey) {
  const InputError e = parse_error("name: a\n---\nname: b\n");
  EXPECT_EQ(e.line(), 3);
  EXPECT_EQ(e.field(), "name");
  EXPECT_NE(std::string(e.what()).find("second YAML document (after '---' at line 2)"), std::string::npos) << e.what();
  for (const char* keyless : {"name: a\n---\n", "name: a\n---\n- 1\n", "name: a\n--- 5\n"}) {
    const InputError k = parse_error(keyless);
    EXPECT_EQ(k.line(), 2) << keyless;
    EXPECT_EQ(k.field(), "(second document)") << keyless;
  }
}

TEST(YamlDocument, ASyntaxErrorNamesTheFieldTheParserStoodIn) {
  const InputError in_list = parse_error("name: x\ntraining:\n  sizes: [1, 2\n  lr: 1\n");
  EXPECT_EQ(in_list.field(), "training.sizes[2]") << in_list.what();
  EXPECT_NE(std::string(in_list.what()).find("YAML syntax error"), std::string::npos) << in_list.what();
  const InputError in_map = parse_error("network:\n  topology: fat_tree\n   bad indent: 1\n");
  EXPECT_EQ(in_map.field(), "network.topology") << in_map.what();
  EXPECT_EQ(in_map.line(), 3);
  const InputError after_a_value = parse_error("a: 1\n b: 2\n");
  EXPECT_EQ(after_a_value.field(), "a") << after_a_value.what();
  const InputError in_a_value = parse_error("name: x\ndescription: [1, 2] nodes\n");
  EXPECT_EQ(in_a_value.field(), "description") << in_a_value.what();
  EXPECT_EQ(in_a_value.line(), 2);
}

TEST(YamlDocument, AKeyThatIsNotANameIsRefusedWithoutBadConversion) {
  for (const char* text : {"? [a, b]\n: 1\n", "{x: 1}: 2\n", "a: 1\n? {b: 2}\n: 3\n", "~: 1\n"}) {
    const InputError e = parse_error(text);
    EXPECT_GT(e.line(), 0) << text;
    EXPECT_EQ(std::string(e.what()).find("bad conversion"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("plain name"), std::string::npos) << e.what();
  }
}

TEST(YamlDocument, ANonScalarValueWhereANumberIsExpectedNamesTheField) {
  const YamlNode root = YamlNode::load_string("a: 1\nb: [1, 2]\n", "in.yaml");
  try {
    root["b"].as_double();
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.line(), 2);
    EXPECT_EQ(e.field(), "b");
  }
}

TEST(YamlDocument, CountsAreReadAs64BitAndRangeChecked) {
  const YamlNode root = YamlNode::load_string("wraps: 4294967298\nhuge: 99999999999999999999\nok: 7\n", "in.yaml");
  const limits::CountRange range{1, 1000};
  EXPECT_EQ(root["ok"].count(range), 7);
  for (const char* key : {"wraps", "huge"}) {
    try {
      root[key].count(range);
      ADD_FAILURE() << key;
    } catch (const InputError& e) {
      EXPECT_EQ(e.field(), key);
    }
  }
}

TEST(YamlDocument, NumbersOutsideTheirPhysicalRangeAreRefused) {
  const YamlNode root = YamlNode::load_string("a: 1e300\nb: 1e-320\nc: nan\nd: .inf\ne: 100\n", "in.yaml");
  EXPECT_EQ(root["e"].in(limits::kLinkBandwidthGbPerS), 100);
  for (const char* key : {"a", "b", "c", "d"}) {
    try {
      root[key].in(limits::kLinkBandwidthGbPerS);
      ADD_FAILURE() << key;
    } catch (const InputError& e) {
      EXPECT_EQ(e.field(), key);
      EXPECT_GT(e.line(), 0);
    }
  }
}

TEST(YamlDocument, AnErrorIsOneLineWhateverTheValueHolds) {
  const YamlNode root = YamlNode::load_string("a: \"x\\ny\\nz\"\n", "in.yaml");
  try {
    root["a"].as_double();
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tandem
