#include "scenarios/scenario_explain.hpp"

#include <sstream>
#include <vector>

#include "common/yaml_reader.hpp"
#include "scenarios/scenario_writer.hpp"

namespace tandem {

namespace {

// The dotted path of a "key: value" line two spaces per level deep, given the keys above it.
std::string path_of(std::vector<std::string>& stack, const std::string& line) {
  const std::size_t indent = line.find_first_not_of(' ');
  const std::size_t colon = line.find(':');
  if (indent == std::string::npos || colon == std::string::npos || line[indent] == '-' || line[indent] == '#') return "";
  stack.resize(indent / 2);
  stack.push_back(line.substr(indent, colon - indent));
  std::string path;
  for (const std::string& key : stack) path += (path.empty() ? "" : ".") + key;
  return path;
}

// The line of `path` (dotted keys) below `node` in the scenario's own file, 0 when the file does
// not spell it. (Recursion, not assignment: assigning a yaml-cpp node rebinds the document's.)
int line_in_file(const YamlNode& node, const std::string& path) {
  if (!node.is_map()) return 0;
  const std::size_t dot = path.find('.');
  const std::optional<YamlNode> child = node.get(path.substr(0, dot));
  if (!child) return 0;
  return dot == std::string::npos ? child->line() : line_in_file(*child, path.substr(dot + 1));
}

}  // namespace

std::string explained_scenario_yaml(const Scenario& s) {
  const YamlNode root = YamlNode::load_file(s.file);
  std::istringstream in(scenario_yaml(s));
  std::ostringstream out;
  out << "# " << s.file << " as the simulator takes it; each field says where its value comes from\n";
  std::vector<std::string> stack;
  for (std::string line; std::getline(in, line);) {
    const std::string path = path_of(stack, line);
    const bool section = !line.empty() && line.back() == ':';  // its fields say where they come from
    if (path.empty() || section) {
      out << line << "\n";
      continue;
    }
    const int at = line_in_file(root, path);
    out << line << (line.size() < 48 ? std::string(48 - line.size(), ' ') : " ")
        << (at > 0 ? "# line " + std::to_string(at) : std::string("# default")) << "\n";
  }
  return out.str();
}

}  // namespace tandem
