#include "cli/validate_command.hpp"

#include <filesystem>
#include <iostream>

#include "validation/validation_run.hpp"

namespace tandem::cli {

CLI::App* add_validate_command(CLI::App& app, ValidateOptions& o) {
  CLI::App* cmd = app.add_subcommand("validate", "predict published measurements (validation/) and print the errors");
  cmd->add_option("cases", o.cases, "case files or folders (default: the bundled validation/cases)");
  cmd->add_flag("--ci", o.ci_only, "only the cases CI runs (ci: true)");
  cmd->add_option("--match", o.match, "only cases whose name contains this");
  cmd->add_option("--jobs,-j", o.jobs, "cases simulated at once")->check(CLI::PositiveNumber);
  cmd->add_flag("--check", o.check, "exit 1 when a case is outside its error band");
  return cmd;
}

int run_validate(const ValidateOptions& o) {
  std::vector<std::string> files;
  if (o.cases.empty()) files = validation::validation_case_files();
  for (const std::string& c : o.cases) {
    if (std::filesystem::is_directory(c)) {
      for (const auto& f : validation::validation_case_files(c)) files.push_back(f);
    } else {
      files.push_back(c);
    }
  }
  std::vector<validation::ValidationCase> cases;
  for (const auto& f : files) {
    // Case files are named after their case: --match selects before loading (a case too large
    // for this machine is refused when loaded).
    if (!o.match.empty() && std::filesystem::path(f).stem().string().find(o.match) == std::string::npos) continue;
    validation::ValidationCase c = validation::load_validation_case(f);
    if (o.ci_only && !c.ci) continue;
    cases.push_back(std::move(c));
  }
  const auto results = validation::run_cases(cases, o.jobs);
  std::cout << validation::format_table(results);
  if (!o.check) return 0;
  for (const auto& r : results) {
    if (!r.within_band()) return 1;
  }
  return 0;
}

}  // namespace tandem::cli
