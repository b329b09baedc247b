#include "cli/check_command.hpp"

#include <filesystem>
#include <iostream>

#include "cli/guarded.hpp"
#include "cli/input_summary.hpp"
#include "common/input_error.hpp"
#include "common/input_file.hpp"
#include "common/yaml_reader.hpp"
#include "platforms/cluster_fields.hpp"
#include "platforms/device_fields.hpp"
#include "platforms/failure_fields.hpp"
#include "scenarios/reliability_fields.hpp"
#include "scenarios/scenario_explain.hpp"
#include "scenarios/scenario_fields.hpp"

namespace tandem::cli {

namespace {

// What a file is, from the fields only that kind has at its top level; then loaded by the
// reader of that kind, which reports anything wrong in it. A name that is no file is a bundled
// scenario's (as `simulate` takes it).
std::string check_one(const std::string& file) {
  if (!path_exists(file)) return describe(load_scenario(file));
  const YamlNode root = YamlNode::load_file(file);
  if (root.has("node_groups")) return describe(load_cluster(file));
  if (root.has("peak_fp32_tflops") || root.has("kind")) return describe(load_device_profile(file));
  if (root.has("search")) return describe(load_search_scenario(file));
  if (root.has("model")) return describe(load_scenario(file));
  throw InputError(file, 1, "",
                   "not a cluster (node_groups), device profile (kind, peak_*), scenario (model) or search "
                   "(search) file");
}

}  // namespace

CLI::App* add_check_command(CLI::App& app, CheckOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "check", "validate cluster, device profile, scenario or search files without simulating");
  cmd->add_option("files", o.files, "files (or bundled scenario names)")->required();
  return cmd;
}

int run_check(const CheckOptions& o) {
  int status = 0;
  for (const std::string& file : o.files) {
    // Each file on its own: one bad file does not hide what is wrong with the next.
    const int result = run_guarded([&] {
      const std::string description = check_one(file);  // before anything is printed: it may throw
      std::cout << file << ": ok: " << description << "\n" << std::flush;
      return 0;
    });
    if (result != 0) status = result == kExitBadInput && status != 1 ? kExitBadInput : 1;
  }
  return status;
}

CLI::App* add_explain_command(CLI::App& app, ExplainOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "explain", "print a scenario as the simulator takes it: every default filled in, each field's source");
  cmd->add_option("scenario", o.scenario, "scenario file (or bundled scenario name)")->required();
  return cmd;
}

int run_explain(const ExplainOptions& o) {
  std::cout << explained_scenario_yaml(load_scenario(o.scenario));
  return 0;
}

CLI::App* add_fields_command(CLI::App& app, FieldsOptions& o) {
  CLI::App* cmd = app.add_subcommand(
      "fields", "print the fields a scenario (and its reliability section), cluster, device or failure profile accepts");
  cmd->add_option("kind", o.kind, "scenario, reliability, cluster, device or failures")
      ->required()
      ->check(CLI::IsMember({"scenario", "reliability", "cluster", "device", "failures"}));
  return cmd;
}

int run_fields(const FieldsOptions& o) {
  if (o.kind == "cluster")
    std::cout << format_field_reference("Cluster files (platforms/clusters/*.yaml)", cluster_fields::kSections);
  if (o.kind == "device")
    std::cout << format_field_reference("Device profiles (platforms/devices/*.yaml)", device_fields::kSections);
  if (o.kind == "scenario")
    std::cout << format_field_reference("Scenario files (scenarios/*.yaml)", scenario_fields::kSections);
  if (o.kind == "reliability")
    std::cout << format_field_reference("A scenario's reliability section (tandem goodput)", reliability_fields::kSections);
  if (o.kind == "failures")
    std::cout << format_field_reference("Failure profiles (platforms/failures/*.yaml)", failure_fields::kSections);
  return 0;
}

}  // namespace tandem::cli
