// `tandem report`: one self-contained HTML report from any of: a predicted and a measured trace,
// a prediction (tandem simulate --json), a measured run summary (tandem run --json), search
// results (tandem-search/1); optionally the two traces as one Perfetto timeline too.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "analysis/report/report.hpp"

namespace tandem::cli {

struct ReportCommandOptions {
  report::ReportFiles files;
  std::string output_path = "report.html";  // -o
  std::string perfetto_path;                // --perfetto: both traces as one Chrome-trace JSON
  int measured_warmup = 0;
};

CLI::App* add_report_command(CLI::App& app, ReportCommandOptions& options);
int run_report(const ReportCommandOptions& options);

}  // namespace tandem::cli
