// `tandem validate [CASE...]`: predicts the validation cases (validation/cases, published
// measurements with their sources) and prints predicted vs published, the error, where each
// prediction's time goes, and the mean and max |error|.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace tandem::cli {

struct ValidateOptions {
  std::vector<std::string> cases;  // case files or folders; the bundled cases when empty
  bool ci_only = false;            // --ci: the subset CI runs
  std::string match;               // --match: case names containing this
  int jobs = 1;                    // cases simulated at once
  bool check = false;              // --check: exit 1 when a case is outside its band
  bool long_cases = false;         // --long: also the cases estimated to take minutes
};

CLI::App* add_validate_command(CLI::App& app, ValidateOptions& options);
int run_validate(const ValidateOptions& options);

}  // namespace tandem::cli
