// Reading the JSON files analysis takes as input (traces, predictions, run summaries, search
// results), with errors that name the file, the line (syntax) or the field (content).
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace tandem {

// Parses `path`; InputError naming the file (and the line of a syntax error) otherwise.
nlohmann::json read_json_file(const std::string& path);

// Typed access to an object's fields; a missing or mistyped field is an InputError naming the
// file and the field's path (e.g. "memory[2].peak_max_bytes").
class JsonFields {
 public:
  JsonFields(const nlohmann::json& object, std::string file, std::string path = "");

  double number(const char* key) const;
  std::optional<double> optional_number(const char* key) const;
  std::string string(const char* key) const;
  std::string optional_string(const char* key, const std::string& fallback = "") const;
  std::optional<bool> optional_boolean(const char* key) const;
  const nlohmann::json& array(const char* key) const;
  bool has(const char* key) const;
  JsonFields object(const char* key) const;   // a nested object
  JsonFields element(const char* key, std::size_t index) const;  // key[index], an object
  const nlohmann::json& json() const { return object_; }
  [[noreturn]] void fail(const std::string& key, const std::string& message) const;

 private:
  const nlohmann::json& get(const char* key, bool (*check)(const nlohmann::json&), const char* expected) const;
  const nlohmann::json& object_;
  std::string file_;
  std::string path_;  // "" or "memory[2]."
};

}  // namespace tandem
