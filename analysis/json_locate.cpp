#include "analysis/json_locate.hpp"

#include <cctype>
#include <cstddef>
#include <vector>

namespace tandem {
namespace {

// One step of a field path: a key of an object, or an index into a list.
struct Step {
  bool is_index;
  std::string key;
  std::size_t index;
};

std::vector<Step> parse_path(const std::string& path) {
  std::vector<Step> steps;
  std::size_t i = 0;
  while (i < path.size()) {
    if (path[i] == '.') {
      ++i;
    } else if (path[i] == '[') {
      std::size_t n = 0;
      for (++i; i < path.size() && std::isdigit(static_cast<unsigned char>(path[i])); ++i) n = n * 10 + (path[i] - '0');
      if (i < path.size() && path[i] == ']') ++i;
      steps.push_back({true, "", n});
    } else {
      std::size_t end = i;
      while (end < path.size() && path[end] != '.' && path[end] != '[') ++end;
      steps.push_back({false, path.substr(i, end - i), 0});
      i = end;
    }
  }
  return steps;
}

// A forward scan over valid JSON that counts lines; values it does not descend into are skipped
// with a bracket count, not recursion, so any nesting depth is fine.
class Scanner {
 public:
  explicit Scanner(const std::string& text) : t_(text) {}

  JsonPosition locate(const std::vector<Step>& steps, int repeat) {
    space();
    for (std::size_t s = 0; s < steps.size(); ++s) {
      const JsonPosition here{line_, i_};
      const Step& step = steps[s];
      const int skip = s + 1 == steps.size() ? repeat : 0;
      if (!(step.is_index ? enter_index(step.index) : enter_key(step.key, skip))) return here;
      space();
    }
    return {line_, i_};
  }

 private:
  bool at(char c) const { return i_ < t_.size() && t_[i_] == c; }
  void advance() {
    if (t_[i_] == '\n') ++line_;
    ++i_;
  }
  void space() {
    while (i_ < t_.size() && std::isspace(static_cast<unsigned char>(t_[i_]))) advance();
  }
  std::string string() {  // at the opening quote; escapes are kept as written (keys rarely have any)
    std::string out;
    advance();
    while (i_ < t_.size() && !at('"')) {
      if (at('\\')) {
        out += t_[i_];
        advance();
      }
      if (i_ < t_.size()) {
        out += t_[i_];
        advance();
      }
    }
    if (i_ < t_.size()) advance();
    return out;
  }
  void skip_value() {
    space();
    if (at('"')) {
      string();
    } else if (at('{') || at('[')) {
      int depth = 0;
      do {
        if (at('"')) {
          string();
          continue;
        }
        if (at('{') || at('[')) ++depth;
        if (at('}') || at(']')) --depth;
        advance();
      } while (depth > 0 && i_ < t_.size());
    } else {
      while (i_ < t_.size() && !at(',') && !at('}') && !at(']') && !std::isspace(static_cast<unsigned char>(t_[i_])))
        advance();
    }
  }
  // Moves to the value of `key` in the object here, passing over its first `skip` occurrences;
  // false when there is none.
  bool enter_key(const std::string& key, int skip) {
    if (!at('{')) return false;
    advance();
    for (space(); i_ < t_.size() && !at('}'); space()) {
      if (!at('"')) return false;
      const std::string name = string();
      space();
      if (at(':')) advance();
      space();
      if (name == key && skip-- == 0) return true;
      skip_value();
      space();
      if (at(',')) advance();
    }
    return false;
  }
  // Moves to element `index` of the list here; false when there is none.
  bool enter_index(std::size_t index) {
    if (!at('[')) return false;
    advance();
    for (std::size_t k = 0;; ++k) {
      space();
      if (i_ >= t_.size() || at(']')) return false;
      if (k == index) return true;
      skip_value();
      space();
      if (at(',')) advance();
    }
  }

  const std::string& t_;
  std::size_t i_ = 0;
  int line_ = 1;
};

}  // namespace

JsonPosition json_position_of(const std::string& text, const std::string& field_path, int repeat) {
  return Scanner(text).locate(parse_path(field_path), repeat);
}

int json_line_of(const std::string& text, const std::string& field_path) {
  return json_position_of(text, field_path).line;
}

}  // namespace tandem
