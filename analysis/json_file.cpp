#include "analysis/json_file.hpp"

#include <algorithm>
#include <fstream>
#include <iterator>

#include "common/input_error.hpp"

namespace tandem {

nlohmann::json read_json_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, 0, "", "cannot open the file");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    // nlohmann reports a byte offset; turn it into a line number.
    const auto end = text.begin() + static_cast<std::ptrdiff_t>(std::min<std::size_t>(e.byte, text.size()));
    const int line = 1 + static_cast<int>(std::count(text.begin(), end, '\n'));
    throw InputError(path, line, "", std::string("JSON syntax error: ") + e.what());
  }
}

JsonFields::JsonFields(const nlohmann::json& object, std::string file, std::string path)
    : object_(object), file_(std::move(file)), path_(std::move(path)) {
  if (!object_.is_object())
    throw InputError(file_, 0, path_.empty() ? std::string("(top level)") : path_.substr(0, path_.size() - 1),
                     "expected an object");
}

void JsonFields::fail(const std::string& key, const std::string& message) const {
  throw InputError(file_, 0, path_ + key, message);
}

bool JsonFields::has(const char* key) const { return object_.contains(key) && !object_[key].is_null(); }

const nlohmann::json& JsonFields::get(const char* key, bool (*check)(const nlohmann::json&),
                                      const char* expected) const {
  if (!object_.contains(key)) fail(key, std::string("missing; expected ") + expected);
  const nlohmann::json& value = object_[key];
  if (!check(value)) fail(key, std::string("expected ") + expected);
  return value;
}

namespace {
bool is_number(const nlohmann::json& v) { return v.is_number(); }
bool is_string(const nlohmann::json& v) { return v.is_string(); }
bool is_boolean(const nlohmann::json& v) { return v.is_boolean(); }
bool is_array(const nlohmann::json& v) { return v.is_array(); }
bool is_object(const nlohmann::json& v) { return v.is_object(); }
}  // namespace

double JsonFields::number(const char* key) const { return get(key, is_number, "a number").get<double>(); }

std::optional<double> JsonFields::optional_number(const char* key) const {
  if (!has(key)) return std::nullopt;
  return number(key);
}

std::string JsonFields::string(const char* key) const { return get(key, is_string, "a string").get<std::string>(); }

std::string JsonFields::optional_string(const char* key, const std::string& fallback) const {
  return has(key) ? string(key) : fallback;
}

std::optional<bool> JsonFields::optional_boolean(const char* key) const {
  if (!has(key)) return std::nullopt;
  return get(key, is_boolean, "true or false").get<bool>();
}

const nlohmann::json& JsonFields::array(const char* key) const { return get(key, is_array, "a list"); }

JsonFields JsonFields::object(const char* key) const {
  return JsonFields(get(key, is_object, "an object"), file_, path_ + key + ".");
}

JsonFields JsonFields::element(const char* key, std::size_t index) const {
  const std::string at = path_ + key + "[" + std::to_string(index) + "]";
  const nlohmann::json& value = array(key).at(index);
  if (!value.is_object()) throw InputError(file_, 0, at, "expected an object");
  return JsonFields(value, file_, at + ".");
}

}  // namespace tandem
