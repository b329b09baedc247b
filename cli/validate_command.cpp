#include "cli/validate_command.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "validation/nccl_validation_run.hpp"
#include "validation/validation_case.hpp"
#include "validation/validation_run.hpp"

namespace tandem::cli {

CLI::App* add_validate_command(CLI::App& app, ValidateOptions& o) {
  CLI::App* cmd = app.add_subcommand("validate", "predict published measurements (validation/) and print the errors");
  cmd->add_option("cases", o.cases,
                  "case files or folders (default: the bundled validation/cases, then the NCCL bus-bandwidth cases of "
                  "validation/nccl)");
  cmd->add_flag("--ci", o.ci_only, "only the cases CI runs (ci: true)");
  cmd->add_option("--match", o.match, "only cases whose name contains this");
  cmd->add_option("--jobs,-j", o.jobs, "cases simulated at once")->check(CLI::PositiveNumber);
  cmd->add_flag("--check", o.check, "exit 1 when a case is outside its error band");
  char quick[16];
  std::snprintf(quick, sizeof quick, "%.2g", validation::kQuickValidationOps);
  cmd->add_flag("--long", o.long_cases,
                std::string("also the long cases (estimated above ") + quick +
                    " ops, minutes each: Llama 3 405B with every rank simulated)");
  return cmd;
}

int run_validate(const ValidateOptions& o) {
  // Case files are named after their case: --match selects before loading (a case too large for
  // this machine is refused when loaded).
  const auto matches = [&](const std::string& file) {
    return o.match.empty() || std::filesystem::path(file).stem().string().find(o.match) != std::string::npos;
  };
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
    if (!matches(f)) continue;
    validation::ValidationCase c = validation::load_validation_case(f, o.long_cases);
    if (o.ci_only && !c.ci) continue;
    cases.push_back(std::move(c));
  }
  // The bundled run also predicts the NCCL bus-bandwidth cases (one collective each, seconds).
  std::vector<sim::NcclCase> nccl_cases;
  if (o.cases.empty()) {
    for (const auto& f : sim::nccl_case_files())
      if (matches(f)) nccl_cases.push_back(sim::load_nccl_case(f));
  }
  const auto results = validation::run_cases(cases, o.jobs);
  if (!cases.empty() || nccl_cases.empty()) std::cout << validation::format_table(results);
  std::vector<validation::NcclCaseResult> nccl;
  if (!nccl_cases.empty()) {
    nccl = validation::run_nccl_cases(nccl_cases, o.jobs);
    std::cout << (cases.empty() ? "" : "\n") << validation::format_nccl_table(nccl);
  }
  if (!o.check) return 0;
  const bool all_within = std::all_of(results.begin(), results.end(), [](const auto& r) { return r.within_band(); }) &&
                          std::all_of(nccl.begin(), nccl.end(), [](const auto& r) { return r.within_band(); });
  return all_within ? 0 : 1;
}

}  // namespace tandem::cli
