#include "cli/calibrate_command.hpp"

#include <filesystem>
#include <iostream>

#include "analysis/calibration/calibrate.hpp"
#include "analysis/calibration/profile_yaml.hpp"
#include "analysis/calibration/provenance.hpp"
#include "common/input_error.hpp"
#include "common/output_set.hpp"
#include "common/usable_cores.hpp"
#include "cli/calibrate_cuda.hpp"
#include "exec/cpu/calibration/cpu_microbenchmarks.hpp"

namespace tandem::cli {

namespace fs = std::filesystem;

CLI::App* add_calibrate_command(CLI::App& app, CalibrateOptions& o) {
  CLI::App* cmd = app.add_subcommand("calibrate", "measure this machine's kernels and links and fit a device profile");
  cmd->add_option("--backend", o.backend, "backend to measure: cpu, or cuda (a CUDA build's GPUs)");
  cmd->add_option("-o,--output", o.device_out, "calibrated device profile to write");
  cmd->add_option("--cluster-out", o.cluster_out, "single-node cluster using that profile, to write");
  cmd->add_option("--base", o.base, "device profile whose peaks, memory and power are kept");
  cmd->add_option("--devices", o.devices, "devices of the cluster and largest group measured")
      ->check(CLI::Range(2, 64));
  cmd->add_flag("--quick", o.quick, "the small grid (seconds instead of a minute)");
  cmd->add_option("--measurements-out", o.measurements_out,
                  "also write every timed op (label, kind, class, FLOPs, bytes, seconds) as CSV, to refit elsewhere");
  return cmd;
}

int run_calibrate(const CalibrateOptions& o) {
#ifdef TANDEM_HAVE_CUDA
  if (o.backend == "cuda") return run_calibrate_cuda(o);
#else
  if (o.backend == "cuda")
    throw InputError("command line", 0, "--backend", "this build has no CUDA backend (rebuild with CUDA to calibrate GPUs)");
#endif
  if (o.backend != "cpu")
    throw InputError("command line", 0, "--backend", "unknown backend '" + o.backend + "' (this build calibrates: cpu)");
  const DeviceProfile base = find_device_profile(o.base);
  const int cores = usable_cores();
  const int devices = o.devices.value_or(std::max(2, cores));
  const std::string device_out =
      o.device_out.empty() ? bundled_dir("platforms/devices") + "/localhost-calibrated.yaml" : o.device_out;
  const std::string cluster_out =
      o.cluster_out.empty() ? bundled_dir("platforms/clusters") + "/localhost-calibrated.yaml" : o.cluster_out;

  OutputSet outputs;  // the profile and its cluster, written together
  OutputSet::check_writable(device_out, "--output");
  OutputSet::check_writable(cluster_out, "--cluster-out");
  if (!o.measurements_out.empty()) OutputSet::check_writable(o.measurements_out, "--measurements-out");
  exec::cpu::CpuMicrobenchmarks bench(devices);
  calibration::CalibrationOptions options;
  options.quick = o.quick;
  options.progress = [](const std::string& line) { std::cout << "  " << line << "\n" << std::flush; };
  std::cout << "calibrating the cpu backend (" << (o.quick ? "quick grid" : "full grid") << ", groups up to "
            << devices << ")\n";
  calibration::CalibrationResult result = calibration::calibrate(bench, base, options);
  DeviceProfile& profile = result.profile;
  profile.name = "localhost-calibrated";
  profile.calibrated = calibration::this_machine(bench.backend(), bench.accelerator());
  std::cout << calibration::describe(result);

  const std::string header = "# Calibrated by `tandem calibrate --backend cpu" + std::string(o.quick ? " --quick" : "") +
                             "` on " + profile.calibrated.machine + " (" + profile.calibrated.cpu_model +
                             "), " + profile.calibrated.date + ".\n# One CPU core as a device; peaks, capacity "
                             "and power are those of '" + base.name + "'; curves and launch overhead measured.\n";
  outputs.stage(device_out, header + calibration::device_profile_yaml(
                                            profile, "this machine's CPU core, calibrated from " + base.name));
  calibration::CalibratedCluster cluster;
  cluster.name = fs::path(cluster_out).stem().string();
  cluster.description = "this machine, " + std::to_string(devices) + " CPU cores as devices, calibrated links";
  const fs::path cluster_dir = fs::absolute(fs::path(cluster_out)).parent_path();
  cluster.device = fs::relative(fs::absolute(device_out), cluster_dir).string();
  if (cluster.device.find('/') == std::string::npos) cluster.device = "./" + cluster.device;
  cluster.devices_per_node = devices;
  cluster.shared_cores = std::max(1, cores);
  cluster.intra_link = result.intra_link;
  // The memory bus caps what all cores copy together: each core's measured copy rate, summed.
  cluster.bus = LinkSpec{result.intra_link.bandwidth_bytes_per_s * devices, 0};
  cluster.collectives = calibration::collective_costs(result);
  outputs.stage(cluster_out, "# Calibrated with " + fs::path(device_out).filename().string() + " (see its header).\n" +
                                 calibration::cluster_yaml(cluster));
  if (!o.measurements_out.empty()) outputs.stage(o.measurements_out, calibration::measurements_csv(result.measurements));
  outputs.commit();
  std::cout << "profile     " << device_out << "\ncluster     " << cluster_out << "\n";
  return 0;
}

}  // namespace tandem::cli
