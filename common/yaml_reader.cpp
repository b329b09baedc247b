#include "common/yaml_reader.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "common/input_file.hpp"
#include "common/yaml_document_check.hpp"

namespace tandem {

YamlNode::YamlNode(YAML::Node node, std::string file, std::string path, int fallback_line)
    : node_(std::move(node)), file_(std::move(file)), path_(std::move(path)),
      fallback_line_(fallback_line) {}

YamlNode YamlNode::load_string(const std::string& text, const std::string& origin) {
  try {
    check_yaml_document(text, origin);
    YAML::Node root = YAML::Load(text);
    if (!root.IsMap()) throw InputError(origin, 1, "", "expected a mapping of fields at the top level");
    return YamlNode(root, origin, "", 1);
  } catch (const YAML::Exception& e) {
    throw InputError(origin, e.mark.line + 1, "", "YAML syntax error: " + e.msg);
  }
}

YamlNode YamlNode::load_file(const std::string& path) {
  return load_string(read_input_file(path, kMaxYamlBytes), path);
}

int YamlNode::line() const {
  // A field is reported at its key: for a block mapping the value starts on the next line.
  if (key_line_ > 0) return key_line_;
  const YAML::Mark mark = node_.Mark();
  return mark.is_null() ? fallback_line_ : mark.line + 1;
}

bool YamlNode::has(const std::string& key) const {
  return node_.IsMap() && node_[key].IsDefined() && !node_[key].IsNull();
}

YamlNode YamlNode::child(const YAML::Node& node, const std::string& key) const {
  YamlNode out(node, file_, path_.empty() ? key : path_ + "." + key, line());
  if (node_.IsMap()) {
    for (const auto& kv : node_) {
      if (kv.first.IsScalar() && kv.first.Scalar() == key && !kv.first.Mark().is_null()) {
        out.key_line_ = kv.first.Mark().line + 1;
        break;
      }
    }
  }
  return out;
}

YamlNode YamlNode::operator[](const std::string& key) const {
  if (!node_.IsMap()) fail("expected a mapping with field '" + key + "'");
  if (!has(key)) {
    YamlNode missing = child(YAML::Node(), key);
    missing.fail("missing required field");
  }
  return child(node_[key], key);
}

std::optional<YamlNode> YamlNode::get(const std::string& key) const {
  if (!has(key)) return std::nullopt;
  return child(node_[key], key);
}

std::vector<YamlNode> YamlNode::items() const {
  if (!node_.IsSequence()) fail("expected a list");
  std::vector<YamlNode> out;
  for (std::size_t i = 0; i < node_.size(); ++i)
    out.push_back(YamlNode(node_[i], file_, path_ + "[" + std::to_string(i) + "]", line()));
  return out;
}

std::vector<std::pair<std::string, YamlNode>> YamlNode::entries() const {
  if (!node_.IsMap()) fail("expected a mapping");
  std::vector<std::pair<std::string, YamlNode>> out;
  for (const auto& kv : node_) {
    const std::string key = kv.first.as<std::string>();
    out.emplace_back(key, child(kv.second, key));
  }
  return out;
}

std::string YamlNode::as_string() const {
  if (!node_.IsScalar()) fail("expected a single value");
  return node_.Scalar();
}

double YamlNode::as_double() const {
  const std::string text = as_string();
  // Accept the usual forms: 1.5, 1e9, 2.5e+12; yaml-cpp's own conversion accepts garbage
  // suffixes in some versions, so parse strictly.
  double value = 0;
  const char* begin = text.data();
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(begin, end, value);
  if (ec != std::errc() || ptr != end || !std::isfinite(value)) fail("expected a number, got '" + text + "'");
  return value;
}

long long YamlNode::as_int() const {
  const std::string text = as_string();
  long long value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec == std::errc::result_out_of_range) fail("is beyond the 64-bit range, got '" + text + "'");
  if (ec != std::errc() || ptr != text.data() + text.size()) {
    fail("expected a whole number, got '" + text + "'");
  }
  return value;
}

bool YamlNode::as_bool() const {
  const std::string text = as_string();
  if (text == "true" || text == "yes" || text == "on") return true;
  if (text == "false" || text == "no" || text == "off") return false;
  fail("expected true or false, got '" + text + "'");
}

double YamlNode::positive() const {
  const double v = as_double();
  if (!(v > 0)) fail("must be positive, got " + as_string());
  return v;
}

double YamlNode::non_negative() const {
  const double v = as_double();
  if (v < 0) fail("must not be negative, got " + as_string());
  return v;
}

long long YamlNode::positive_int() const {
  const long long v = as_int();
  if (v <= 0) fail("must be a positive whole number, got " + as_string());
  return v;
}

namespace {
std::string number_text(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}
}  // namespace

double YamlNode::in(const limits::Range& range) const {
  const double v = as_double();
  if (!(v >= range.min && v <= range.max)) {
    const std::string unit = *range.unit ? std::string(" ") + range.unit : std::string();
    const std::string span = "between " + number_text(range.min) + " and " + number_text(range.max) + unit;
    if (range.min > 0 && !(v > 0)) fail("must be positive (" + span + "), got " + as_string());
    if (range.min == 0 && v < 0) fail("must not be negative (" + span + "), got " + as_string());
    fail("must be " + span + ", got " + as_string());
  }
  return v;
}

long long YamlNode::count(const limits::CountRange& range) const {
  const long long v = as_int();
  if (range.min == 1 && v < 1)
    fail("must be a positive whole number (at most " + std::to_string(range.max) + "), got " + as_string());
  if (v < range.min || v > range.max)
    fail("must be a whole number between " + std::to_string(range.min) + " and " + std::to_string(range.max) +
         ", got " + as_string());
  return v;
}

std::string YamlNode::str_or(const std::string& key, const std::string& fallback) const {
  auto n = get(key);
  return n ? n->as_string() : fallback;
}

double YamlNode::positive_or(const std::string& key, double fallback) const {
  auto n = get(key);
  return n ? n->positive() : fallback;
}

long long YamlNode::positive_int_or(const std::string& key, long long fallback) const {
  auto n = get(key);
  return n ? n->positive_int() : fallback;
}

bool YamlNode::bool_or(const std::string& key, bool fallback) const {
  auto n = get(key);
  return n ? n->as_bool() : fallback;
}

void YamlNode::only_keys(std::initializer_list<const char*> allowed) const {
  only_names(std::vector<const char*>(allowed));
}

void YamlNode::only_keys(std::span<const FieldDoc> allowed) const {
  std::vector<const char*> names;
  for (const FieldDoc& f : allowed) names.push_back(f.name);
  only_names(names);
}

void YamlNode::only_names(const std::vector<const char*>& allowed) const {
  if (!node_.IsMap()) fail("expected a mapping");
  for (const auto& kv : node_) {
    const std::string key = kv.first.as<std::string>();
    bool known = false;
    for (const char* a : allowed) known = known || key == a;
    if (!known) {
      std::string list;
      for (const char* a : allowed) list += std::string(list.empty() ? "" : ", ") + a;
      YamlNode(kv.first, file_, path_.empty() ? key : path_ + "." + key, line())
          .fail("unknown field (expected one of: " + list + ")");
    }
  }
}

void YamlNode::fail(const std::string& message) const {
  throw InputError(file_, line(), path_, message);
}

}  // namespace tandem
