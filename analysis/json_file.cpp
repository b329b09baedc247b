#include "analysis/json_file.hpp"

#include <cmath>

#include "analysis/json_locate.hpp"
#include "analysis/json_strict_parse.hpp"
#include "common/gzip.hpp"
#include "common/input_error.hpp"

namespace tandem {

JsonInput read_json_input(const std::string& path, std::uint64_t max_bytes) {
  JsonInput input{path, read_input_file(path, max_bytes), nullptr};
  if (is_gzip_path(path)) {  // a trace written as .json.gz
    try {
      input.text = gzip_decompress(input.text, max_bytes);
    } catch (const std::runtime_error& e) {
      throw InputError(path, 0, kWholeFileField, std::string("gzip: ") + e.what());
    }
  }
  input.root = parse_json_strictly(input.text, [&](const JsonRefusal& r) {
    // The byte as well as the line: a trace written without indentation is one line.
    throw InputError(path, r.line, r.field.empty() ? std::string("(top level)") : r.field,
                     r.message + " (at byte " + std::to_string(r.byte) + ")");
  });
  return input;
}

JsonFields::JsonFields(const JsonInput& input) : JsonFields(input.root, input.file, "", &input.text) {}

JsonFields::JsonFields(const nlohmann::json& object, std::string file, std::string path, const std::string* text)
    : object_(object), file_(std::move(file)), path_(std::move(path)), text_(text) {
  if (!object_.is_object()) fail_at(path_.empty() ? std::string("(top level)") : path_.substr(0, path_.size() - 1),
                                    "expected an object");
}

void JsonFields::fail_at(const std::string& field, const std::string& message) const {
  const int line = text_ != nullptr ? json_line_of(*text_, field) : 0;
  throw InputError(file_, line, field, message);
}

void JsonFields::fail(const std::string& key, const std::string& message) const { fail_at(path_ + key, message); }

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
bool is_whole(const nlohmann::json& v) { return v.is_number_integer(); }
bool is_string(const nlohmann::json& v) { return v.is_string(); }
bool is_boolean(const nlohmann::json& v) { return v.is_boolean(); }
bool is_array(const nlohmann::json& v) { return v.is_array(); }
bool is_object(const nlohmann::json& v) { return v.is_object(); }
}  // namespace

double JsonFields::number(const char* key) const {
  const double v = get(key, is_number, "a number").get<double>();
  if (!std::isfinite(v)) fail(key, "expected a finite number");
  return v;
}

long long JsonFields::whole(const char* key, long long lowest, long long highest) const {
  const nlohmann::json& v = get(key, is_whole, "a whole number");
  // An unsigned value above the signed range is out of range whatever the bounds.
  const bool too_big = v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(highest);
  const long long n = too_big ? highest : v.get<long long>();
  if (too_big || n < lowest || n > highest)
    fail(key, "must be a whole number between " + std::to_string(lowest) + " and " + std::to_string(highest) +
                  ", got " + v.dump());
  return n;
}

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

std::vector<double> JsonFields::numbers(const char* key, const char* noun, bool non_negative) const {
  const nlohmann::json& list = array(key);
  std::vector<double> out;
  out.reserve(list.size());
  for (std::size_t k = 0; k < list.size(); ++k) {
    const double v = list[k].is_number() ? list[k].get<double>() : std::nan("");
    if (!std::isfinite(v) || (non_negative && v < 0))
      fail(key, std::string(noun) + " " + std::to_string(k + 1) + " is not a finite" +
                    (non_negative ? ", non-negative" : "") + " number");
    out.push_back(v);
  }
  return out;
}

JsonFields JsonFields::object(const char* key) const {
  return JsonFields(get(key, is_object, "an object"), file_, path_ + key + ".", text_);
}

JsonFields JsonFields::element(const char* key, std::size_t index) const {
  const std::string at = path_ + key + "[" + std::to_string(index) + "]";
  const nlohmann::json& value = array(key).at(index);
  if (!value.is_object()) fail_at(at, "expected an object");
  return JsonFields(value, file_, at + ".", text_);
}

}  // namespace tandem
