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

  void OnDocumentStart(const YAML::Mark& mark) override {
    if (++documents_ > 1)
      throw InputError(origin_, line(mark), "",
                       "a second YAML document (after '---'); a description is one document");
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { node(mark, nullptr); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { node(mark, nullptr); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t, const std::string& value) override {
    node(mark, &value);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    levels_.push_back(Level{false, node(mark, nullptr), {}, "", 0});
  }
  void OnSequenceEnd() override { levels_.pop_back(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    levels_.push_back(Level{true, node(mark, nullptr), {}, "", 0});
  }
  void OnMapEnd() override { levels_.pop_back(); }

 private:
  struct Level {
    bool is_map;
    std::string path;                 // dotted path of this mapping or list
    std::map<std::string, int> keys;  // mapping: each key's line
    std::string key;                  // mapping: the key whose value comes next ("" = a key comes next)
    int index;                        // list: the next item's index
  };

  static int line(const YAML::Mark& mark) { return mark.is_null() ? 0 : mark.line + 1; }

  // Every node, in order: a key of the enclosing mapping, its value, or a list item. Returns the
  // node's dotted path.
  std::string node(const YAML::Mark& mark, const std::string* scalar) {
    if (levels_.empty()) return "";
    Level& up = levels_.back();
    if (!up.is_map) return up.path + "[" + std::to_string(up.index++) + "]";
    if (!up.key.empty()) {  // a value
      std::string path = up.path.empty() ? up.key : up.path + "." + up.key;
      up.key.clear();
      return path;
    }
    if (scalar == nullptr || scalar->empty())
      throw InputError(origin_, line(mark), up.path, "a key must be a plain name, not a list, mapping, alias or null");
    const std::string field = up.path.empty() ? *scalar : up.path + "." + *scalar;
    const auto [earlier, fresh] = up.keys.emplace(*scalar, line(mark));
    if (!fresh)
      throw InputError(origin_, line(mark), field,
                       "given twice (first at line " + std::to_string(earlier->second) + "); give each field once");
    up.key = *scalar;
    return field;
  }

  std::string origin_;
  int documents_ = 0;
  std::vector<Level> levels_;
};

}  // namespace

void check_yaml_document(const std::string& text, const std::string& origin) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  DocumentChecker checker(origin);
  while (parser.HandleNextDocument(checker)) {
  }
}

}  // namespace tandem
