#include "platforms/failure_profile.hpp"

#include <filesystem>
#include <stdexcept>

#include "common/input_error.hpp"
#include "common/input_file.hpp"
#include "common/yaml_reader.hpp"
#include "platforms/cluster.hpp"  // bundled_dir
#include "platforms/failure_fields.hpp"

namespace tandem {

namespace {
constexpr double kSecondsPerDay = 86400;
// Ranges of a profile's numbers: beyond them a value is a typo, not an observation.
}  // namespace

const char* to_string(FailureScope scope) {
  switch (scope) {
    case FailureScope::device: return "device";
    case FailureScope::node: return "node";
    case FailureScope::leaf_switch: return "leaf_switch";
    case FailureScope::job: return "job";
  }
  return "?";
}

FailureScope parse_failure_scope(const std::string& text) {
  if (text == "device") return FailureScope::device;
  if (text == "node") return FailureScope::node;
  if (text == "leaf_switch") return FailureScope::leaf_switch;
  if (text == "job") return FailureScope::job;
  throw std::invalid_argument("unknown failure scope '" + text + "' (expected device, node, leaf_switch or job)");
}

double FailureProfile::rate_per_unit_per_s(const FailureCause& cause) const {
  double units = observed_devices;
  if (cause.scope == FailureScope::node) units = static_cast<double>(observed_devices) / observed_devices_per_node;
  if (cause.scope == FailureScope::leaf_switch) units = observed_leaf_switches;
  return cause.interruptions / (observed_days * kSecondsPerDay * units);
}

FailureProfile load_failure_profile(const std::string& path) {
  const YamlNode root = YamlNode::load_file(path);
  root.only_keys(failure_fields::kRoot);
  FailureProfile p;
  p.file = path;
  p.name = root.str_or("name", std::filesystem::path(path).stem().string());
  p.source = root.str("source");
  const YamlNode observed = root["observed"];
  observed.only_keys(failure_fields::kObserved);
  p.observed_days = observed["days"].in(failure_fields::kObservedDays);
  p.observed_devices = static_cast<int>(observed["devices"].count(failure_fields::kObservedUnits));
  p.observed_devices_per_node = static_cast<int>(observed["devices_per_node"].count(failure_fields::kObservedUnits));
  if (p.observed_devices % p.observed_devices_per_node != 0)
    observed["devices_per_node"].fail("does not divide devices");
  if (auto leaves = observed.get("leaf_switches")) p.observed_leaf_switches = static_cast<int>(leaves->count(failure_fields::kObservedUnits));
  const YamlNode causes = root["causes"];
  for (const YamlNode& item : causes.items()) {
    item.only_keys(failure_fields::kCause);
    FailureCause c;
    c.name = item.str("name");
    c.line = item.line();
    try {
      c.scope = parse_failure_scope(item.str("scope"));
    } catch (const std::invalid_argument& e) {
      item["scope"].fail(e.what());
    }
    if (c.scope == FailureScope::leaf_switch && p.observed_leaf_switches == 0)
      item["scope"].fail("a leaf_switch cause needs observed.leaf_switches");
    c.interruptions = item["interruptions"].in(failure_fields::kInterruptions);
    c.includes = item.str_or("includes", "");
    for (const FailureCause& other : p.causes)
      if (other.name == c.name) item["name"].fail("cause '" + c.name + "' is listed twice");
    p.causes.push_back(c);
  }
  if (p.causes.empty()) causes.fail("lists no cause");
  return p;
}

FailureProfile find_failure_profile(const std::string& name_or_path) {
  if (name_or_path.find('/') != std::string::npos || name_or_path.ends_with(".yaml"))
    return load_failure_profile(name_or_path);
  const std::string bundled = bundled_dir("platforms/failures") + "/" + name_or_path + ".yaml";
  if (!path_exists(bundled))
    throw InputError(name_or_path, 0, "failures", "no bundled failure profile of that name (platforms/failures/)");
  return load_failure_profile(bundled);
}

}  // namespace tandem
