// A thin layer over yaml-cpp that remembers where every value came from, so that each
// description loader (devices, clusters, scenarios) reports bad input the same way:
// "file:line: field 'a.b.c': what is wrong".
#pragma once

#include <yaml-cpp/yaml.h>

#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/field_doc.hpp"
#include "common/input_error.hpp"
#include "common/input_limits.hpp"

namespace tandem {

class YamlNode {
 public:
  // Parses a whole file; a missing, non-regular or oversized file (common/input_file.hpp) or a
  // syntax error becomes an InputError.
  static YamlNode load_file(const std::string& path);
  // Parses text held in memory (tests, embedded defaults); `origin` names it in errors. A key
  // given twice, a key that is not a name, or a second document is refused
  // (common/yaml_document_check.hpp).
  static YamlNode load_string(const std::string& text, const std::string& origin);

  const std::string& file() const { return file_; }
  const std::string& path() const { return path_; }  // dotted field path, "" at the root
  int line() const;                                  // 1-based

  bool is_map() const { return node_.IsMap(); }
  bool is_sequence() const { return node_.IsSequence(); }
  bool has(const std::string& key) const;

  // A required key: missing -> "missing required field".
  YamlNode operator[](const std::string& key) const;
  // An optional key.
  std::optional<YamlNode> get(const std::string& key) const;
  // Elements of a sequence (error if this is not one).
  std::vector<YamlNode> items() const;
  // Key/value pairs of a map, in file order.
  std::vector<std::pair<std::string, YamlNode>> entries() const;

  // Scalars, with a type error naming the field when the text does not convert.
  std::string as_string() const;
  double as_double() const;
  long long as_int() const;
  bool as_bool() const;

  // Checked scalars, the common constraints of descriptions.
  double positive() const;      // > 0
  double non_negative() const;  // >= 0
  long long positive_int() const;
  // A number within a physical range (common/input_limits.hpp), and a whole number within a
  // count's range: read as 64-bit, so nothing wraps before the check.
  double in(const limits::Range& range) const;
  long long count(const limits::CountRange& range) const;

  // Required/optional shorthands.
  std::string str(const std::string& key) const { return (*this)[key].as_string(); }
  std::string str_or(const std::string& key, const std::string& fallback) const;
  double positive_or(const std::string& key, double fallback) const;
  long long positive_int_or(const std::string& key, long long fallback) const;
  bool bool_or(const std::string& key, bool fallback) const;

  // Refuses keys not in `allowed`: a typo in a knob name must not be silently ignored.
  void only_keys(std::initializer_list<const char*> allowed) const;
  // The same against a section's field table (common/field_doc.hpp), which `tandem fields` prints.
  void only_keys(std::span<const FieldDoc> allowed) const;

  // An InputError located at this node.
  [[noreturn]] void fail(const std::string& message) const;

 private:
  YamlNode(YAML::Node node, std::string file, std::string path, int fallback_line);
  YamlNode child(const YAML::Node& node, const std::string& key) const;
  void only_names(const std::vector<const char*>& allowed) const;

  YAML::Node node_;
  std::string file_;
  std::string path_;
  int fallback_line_;  // the parent's line, for nodes yaml-cpp gives no mark (missing keys)
  int key_line_ = 0;   // the line of this field's key, when it has one
};

}  // namespace tandem
