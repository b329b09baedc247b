#include "common/yaml_document_check.hpp"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>
#include <yaml-cpp/yaml.h>

#include <map>
#include <sstream>
#include <vector>

#include "common/input_error.hpp"

namespace tandem {
namespace {

class DocumentChecker : public YAML::EventHandler {
 public:
  explicit DocumentChecker(std::string origin) : origin_(std::move(origin)) {}

  // A second document is refused at its first key, which names it (the field a reader would
  // have looked for); one without keys at its start.
  void OnDocumentStart(const YAML::Mark& mark) override {
    if (++documents_ > 1) second_document_line_ = line(mark);
  }
  void OnDocumentEnd() override {
    if (second_document_line_ > 0) refuse_second_document(second_document_line_, "(second document)");
  }

  // The field the parser stands in, for a syntax error: the key whose value is being read, the
  // list's next item, or, between keys, the last key read (the usual culprit: its value ran on,
  // e.g. `description: [1, 2] nodes`, or a line indented under it).
  std::string where() const {
    if (levels_.empty()) return kTopLevel;
    const Level& up = levels_.back();
    if (!up.is_map) return up.path + "[" + std::to_string(up.index) + "]";
    const std::string& key = !up.key.empty() ? up.key : up.last_key;
    if (!key.empty()) return up.path.empty() ? key : up.path + "." + key;
    return up.path.empty() ? kTopLevel : up.path;
  }
  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { node(mark, nullptr); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { node(mark, nullptr); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t, const std::string& value) override {
    node(mark, &value);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    levels_.push_back(Level{false, node(mark, nullptr), {}, "", "", 0});
  }
  void OnSequenceEnd() override { levels_.pop_back(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    levels_.push_back(Level{true, node(mark, nullptr), {}, "", "", 0});
  }
  void OnMapEnd() override { levels_.pop_back(); }

 private:
  struct Level {
    bool is_map;
    std::string path;                 // dotted path of this mapping or list
    std::map<std::string, int> keys;  // mapping: each key's line
    std::string key;                  // mapping: the key whose value comes next ("" = a key comes next)
    std::string last_key;             // mapping: the latest key read
    int index;                        // list: the next item's index
  };

  static int line(const YAML::Mark& mark) { return mark.is_null() ? 0 : mark.line + 1; }

  // Every node, in order: a key of the enclosing mapping, its value, or a list item. Returns the
  // node's dotted path.
  std::string node(const YAML::Mark& mark, const std::string* scalar) {
    if (second_document_line_ > 0) {
      const bool first_key = levels_.size() == 1 && levels_[0].is_map && scalar != nullptr && !scalar->empty();
      if (first_key) refuse_second_document(line(mark), *scalar);
      if (!levels_.empty()) refuse_second_document(second_document_line_, "(second document)");
      return "";  // the second document's root: its first key comes next
    }
    if (levels_.empty()) return "";
    Level& up = levels_.back();
    if (!up.is_map) return up.path + "[" + std::to_string(up.index++) + "]";
    if (!up.key.empty()) {  // a value
      std::string path = up.path.empty() ? up.key : up.path + "." + up.key;
      up.key.clear();
      return path;
    }
    if (scalar == nullptr || scalar->empty())
      throw InputError(origin_, line(mark), up.path.empty() ? kTopLevel : up.path,
                       "a key must be a plain name, not a list, mapping, alias or null");
    const std::string field = up.path.empty() ? *scalar : up.path + "." + *scalar;
    const auto [earlier, fresh] = up.keys.emplace(*scalar, line(mark));
    if (!fresh)
      throw InputError(origin_, line(mark), field,
                       "given twice (first at line " + std::to_string(earlier->second) + "); give each field once");
    up.key = *scalar;
    up.last_key = *scalar;
    return field;
  }

  [[noreturn]] void refuse_second_document(int at_line, const std::string& field) const {
    throw InputError(origin_, at_line, field,
                     "a second YAML document (after '---' at line " + std::to_string(second_document_line_) +
                         "); a description is one document");
  }

  static constexpr const char* kTopLevel = "(top level)";
  std::string origin_;
  int documents_ = 0;
  int second_document_line_ = 0;  // where a second document starts; 0 while there is one
  std::vector<Level> levels_;
};

}  // namespace

void check_yaml_document(const std::string& text, const std::string& origin) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  DocumentChecker checker(origin);
  try {
    while (parser.HandleNextDocument(checker)) {
    }
  } catch (const YAML::Exception& e) {
    // The same parser yaml-cpp's loader uses: every syntax error surfaces here first.
    throw InputError(origin, e.mark.is_null() ? 0 : e.mark.line + 1, checker.where(), "YAML syntax error: " + e.msg);
  }
}

}  // namespace tandem
