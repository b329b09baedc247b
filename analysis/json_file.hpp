// Reading the JSON files analysis takes as input (traces, predictions, run summaries, search
// results), with errors that name the file, the line and the field (e.g. "records[3].rank").
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/input_file.hpp"

namespace tandem {

// A parsed JSON input with its text, kept so that an error can name its field's line.
struct JsonInput {
  std::string file;
  std::string text;
  nlohmann::json root;
};

// Parses `path` (a regular file of at most `max_bytes`, common/input_file.hpp); an InputError
// naming the file, the line and the field otherwise: a syntax error, a key given twice in one
// object, a number beyond a double (analysis/json_strict_parse.hpp).
JsonInput read_json_input(const std::string& path, std::uint64_t max_bytes = kMaxJsonBytes);

// Typed access to an object's fields; a missing or mistyped field is an InputError naming the
// file, the field's line (when the text is known) and its path (e.g. "memory[2].peak_max_bytes").
class JsonFields {
 public:
  explicit JsonFields(const JsonInput& input);
  JsonFields(const nlohmann::json& object, std::string file, std::string path = "", const std::string* text = nullptr);

  double number(const char* key) const;  // finite
  // A whole number within [lowest, highest]: a rank or a count that must not wrap when narrowed.
  long long whole(const char* key, long long lowest, long long highest) const;
  std::optional<double> optional_number(const char* key) const;
  std::string string(const char* key) const;
  std::string optional_string(const char* key, const std::string& fallback = "") const;
  std::optional<bool> optional_boolean(const char* key) const;
  const nlohmann::json& array(const char* key) const;
  // A list of finite numbers (non-negative ones when asked); one that is not is an error at `key`
  // naming it by `noun` and its 1-based place ("step 3 is not a finite number").
  std::vector<double> numbers(const char* key, const char* noun, bool non_negative = false) const;
  bool has(const char* key) const;
  JsonFields object(const char* key) const;   // a nested object
  JsonFields element(const char* key, std::size_t index) const;  // key[index], an object
  const nlohmann::json& json() const { return object_; }
  [[noreturn]] void fail(const std::string& key, const std::string& message) const;

 private:
  const nlohmann::json& get(const char* key, bool (*check)(const nlohmann::json&), const char* expected) const;
  [[noreturn]] void fail_at(const std::string& field, const std::string& message) const;
  const nlohmann::json& object_;
  std::string file_;
  std::string path_;  // "" or "memory[2]."
  const std::string* text_;  // the file's text, for lines; may be null
};

}  // namespace tandem
