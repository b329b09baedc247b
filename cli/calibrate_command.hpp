// `tandem calibrate --backend cpu|cuda [-o FILE] [--cluster-out FILE] [--quick]`: runs
// calibration's microbenchmarks on the real backend (analysis/calibration/calibrate.hpp), fits
// the device's efficiency curves, launch overhead and intra-node link, and writes a calibrated
// device profile (with its provenance) and a single-node cluster that uses it, both atomically
// (cuda: cli/calibrate_cuda.hpp; GPU-sized grids, NCCL among the GPUs). A backend this build
// does not have (cuda without a CUDA build) is refused with exit status 2.
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>

namespace tandem::cli {

struct CalibrateOptions {
  std::string backend = "cpu";
  std::string device_out;   // default: <bundled platforms>/devices/localhost-calibrated.yaml
  std::string cluster_out;  // default: <bundled platforms>/clusters/localhost-calibrated.yaml
  std::string base = "cpu-generic";  // the profile whose peaks, capacity and power are kept
  std::optional<int> devices;        // devices of the cluster (default: this machine's cores)
  bool quick = false;
  std::string measurements_out;  // every timed op as CSV (optional)
};

CLI::App* add_calibrate_command(CLI::App& app, CalibrateOptions& options);
int run_calibrate(const CalibrateOptions& options);

}  // namespace tandem::cli
