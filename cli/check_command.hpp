// `tandem check FILE...`: loads each cluster, device profile, scenario or search file as the
// commands that use it do, without simulating, and prints one line per file saying what it
// describes; a bad file gets the usual file:line: field error. Exit 0 when every file loads, 2
// otherwise (every file is still checked). `tandem fields KIND`: the field reference of a kind
// of file, printed from the tables its reader checks keys against (common/field_doc.hpp).
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace tandem::cli {

struct CheckOptions {
  std::vector<std::string> files;
};

struct ExplainOptions {
  std::string scenario;
};

struct FieldsOptions {
  std::string kind;  // scenario, cluster, device
};

CLI::App* add_check_command(CLI::App& app, CheckOptions& options);
int run_check(const CheckOptions& options);

// `tandem explain SCENARIO`: the scenario with every default filled in, each field's source.
CLI::App* add_explain_command(CLI::App& app, ExplainOptions& options);
int run_explain(const ExplainOptions& options);

CLI::App* add_fields_command(CLI::App& app, FieldsOptions& options);
int run_fields(const FieldsOptions& options);

}  // namespace tandem::cli
