#include "cli/calibrate_cuda.hpp"

#ifdef TANDEM_HAVE_CUDA

#include <algorithm>
#include <filesystem>
#include <iostream>

#include "analysis/calibration/calibrate.hpp"
#include "analysis/calibration/profile_yaml.hpp"
#include "analysis/calibration/provenance.hpp"
#include "analysis/format.hpp"
#include "common/input_error.hpp"
#include "common/output_set.hpp"
#include "exec/cuda/calibration/cuda_microbenchmarks.hpp"
#include "exec/cuda/cuda_run.hpp"

namespace tandem::cli {

namespace fs = std::filesystem;

namespace {

// The bundled profile whose peaks, capacity and power a GPU keeps: named by --base, else found
// from the GPU's name ("NVIDIA H200" -> h200-sxm).
DeviceProfile base_profile(const CalibrateOptions& o, const std::string& accelerator) {
  if (o.base != "cpu-generic") return find_device_profile(o.base);
  const std::string bundled = bundled_profile_of_gpu(accelerator);
  if (bundled.empty())
    throw InputError("command line", 0, "--base", "no bundled profile for GPU '" + accelerator + "': name one with --base");
  return find_device_profile(bundled);
}

std::string gpu_cluster_yaml(const std::string& name, const std::string& device, int devices, const LinkSpec& link) {
  std::string y = "name: " + name + "\n";
  y += "description: this machine's " + std::to_string(devices) + " GPUs, calibrated send/recv link\n";
  y += "node_groups:\n  - name: gpus\n    device: " + device + "\n    nodes: 1\n";
  y += "    devices_per_node: " + std::to_string(devices) + "\n";
  // The fitted rate is what NCCL achieves: no nvlink_generation, so the NCCL model does not
  // discount it a second time.
  y += "    intra_node: { fabric: nvswitch, bandwidth_gb_per_s: " + printf_string("%.6g", link.bandwidth_bytes_per_s / 1e9) +
       ", latency_us: " + printf_string("%.6g", link.latency_s * 1e6) + " }\n";
  return y;
}

}  // namespace

int run_calibrate_cuda(const CalibrateOptions& o) {
  const int gpus = exec::cuda::cuda_device_count();
  if (gpus < 1) throw InputError("command line", 0, "--backend", "no CUDA device visible to this process");
  const int devices = std::min(o.devices.value_or(gpus), gpus);
  exec::cuda::CudaCalibrationBench bench(devices);
  const DeviceProfile base = base_profile(o, bench.accelerator());
  const std::string stem = fs::path(base.file).stem().string() + "-calibrated";
  const std::string device_out = o.device_out.empty() ? stem + ".yaml" : o.device_out;
  const std::string cluster_out = o.cluster_out.empty() ? stem + "-cluster.yaml" : o.cluster_out;
  OutputSet outputs;  // the profile and its cluster, written together once calibration succeeded
  OutputSet::check_writable(device_out, "--output");
  OutputSet::check_writable(cluster_out, "--cluster-out");
  if (!o.measurements_out.empty()) OutputSet::check_writable(o.measurements_out, "--measurements-out");

  calibration::CalibrationOptions options;
  options.quick = o.quick;
  options.precision = DType::bf16;
  options.max_group_size = devices;
  options.progress = [](const std::string& line) { std::cout << "  " << line << "\n" << std::flush; };
  std::cout << "calibrating the cuda backend on " << bench.accelerator() << " (" << (o.quick ? "quick grid" : "full grid")
            << ", " << devices << " GPU" << (devices > 1 ? "s" : "") << ")\n";
  calibration::CalibrationResult result = calibration::calibrate(bench, base, options);
  DeviceProfile& profile = result.profile;
  profile.name = base.name + "-calibrated";
  profile.calibrated = calibration::this_machine(bench.backend(), bench.accelerator());
  std::cout << calibration::describe(result);

  const std::string header = "# Calibrated by `tandem calibrate --backend cuda" + std::string(o.quick ? " --quick" : "") +
                             "` on " + profile.calibrated.machine + " (" + bench.accelerator() + "), " +
                             profile.calibrated.date + ".\n# Peaks, capacity and power are those of '" + base.name +
                             "'; curves and launch overhead measured.\n";
  outputs.stage(device_out, header + calibration::device_profile_yaml(profile, bench.accelerator() + ", calibrated"));
  const bool with_cluster = devices >= 2 && result.intra_link.bandwidth_bytes_per_s > 0;
  if (with_cluster) {
    const fs::path cluster_dir = fs::absolute(fs::path(cluster_out)).parent_path();
    std::string device = fs::relative(fs::absolute(device_out), cluster_dir).string();
    if (device.find('/') == std::string::npos) device = "./" + device;
    outputs.stage(cluster_out, "# Calibrated with " + fs::path(device_out).filename().string() + " (see its header).\n" +
                                   gpu_cluster_yaml(fs::path(cluster_out).stem().string(), device, devices,
                                                    result.intra_link));
  }
  if (!o.measurements_out.empty()) outputs.stage(o.measurements_out, calibration::measurements_csv(result.measurements));
  outputs.commit();
  std::cout << "profile     " << device_out << "\n";
  if (with_cluster) std::cout << "cluster     " << cluster_out << "\n";
  return 0;
}

}  // namespace tandem::cli

#endif  // TANDEM_HAVE_CUDA
