// A device profile: what one accelerator (or CPU socket/core) can do, from its datasheet, plus
// the efficiencies that turn peaks into achievable speeds (fitted by calibration later).
// Profiles live as YAML in platforms/devices/, one per device, each number with its source.
#pragma once

#include <array>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/units.hpp"
#include "platforms/efficiency_curve.hpp"
#include "strategies/op.hpp"
#include "strategies/tensor.hpp"

namespace tandem {

struct DeviceProfile {
  std::string name;  // e.g. "H100-SXM"
  std::string kind;  // "gpu" or "cpu"
  std::string file;  // where it was loaded from

  // Dense peak throughput per dtype (no sparsity).
  FlopsPerSecond peak_fp32_flops_per_s = 0;
  FlopsPerSecond peak_bf16_flops_per_s = 0;
  FlopsPerSecond peak_fp16_flops_per_s = 0;
  FlopsPerSecond peak_fp8_flops_per_s = 0;  // dense FP8 tensor cores; 0: none (Ampere and older)

  BytesPerSecond memory_bandwidth_bytes_per_s = 0;
  Bytes memory_capacity_bytes = 0;

  Watts idle_power_w = 0;
  Watts busy_power_w = 0;
  double price_per_hour_usd = 0;  // for cost objectives; 0 = unknown

  Seconds launch_overhead_s = 0;  // per kernel
  // CPU devices that are threads sharing cores (NodeGroup::shared_cores), when ranks outnumber
  // cores and take turns (sim/core_turns.hpp): a core handed from a thread that blocks to one
  // that waited for it costs a context switch (core time); a thread woken onto an idle core
  // waits for the core to resume (a delay). Measured by `tandem calibrate` (thread ping-pong).
  Seconds core_handoff_s = 0;
  Seconds core_wake_s = 0;
  // CPU devices sharing cores: the curves below time kernels with every core running one
  // (calibration runs one replica per core, as training does); a rank with the machine's other
  // cores idle runs its kernels in this fraction of that time (no neighbour in its caches, its
  // memory bandwidth, its SMT core). With k of c cores running ranks the simulator scales kernels
  // by fraction + (1 - fraction) (k - 1) / (c - 1) (sim/core_contention.hpp). Measured by
  // `tandem calibrate` (the same workloads alone); 1: not measured.
  double alone_kernel_time_fraction = 1;
  // The same devices, when ranks that wait for each other each have a core: the slowest core's
  // kernel time over the cores' mean (the curves hold the mean). A step that synchronises its
  // ranks goes at the slowest one's pace (sim/core_contention.hpp). Measured by `tandem
  // calibrate` from the replicas side by side; 1: not measured.
  double slowest_core_kernel_time_factor = 1;

  // Fraction of peak FLOP/s and of memory bandwidth an op of each compute kind reaches
  // (indexed by OpKind, compute kinds only). Defaults are set by the loader per kind.
  std::array<double, kOpKindCount> flop_efficiency{};
  std::array<double, kOpKindCount> memory_efficiency{};

  // Calibrated efficiency curves (optional `efficiency_curves:`; `tandem calibrate` writes
  // them), by kernel class (platforms/kernel_class.hpp: "gemm", "elementwise.gelu", ...) or kind
  // name. An op with a curve is costed by the curve on its bound side alone, replacing the
  // roofline of the constant efficiencies above (sim/cost_model.hpp says why).
  std::map<std::string, EfficiencyCurve> efficiency_curves;
  // The curve for an op: its class's, else its kind's, else null.
  const EfficiencyCurve* curve_for(const ComputeOp& op) const;

  // A GPU's kernel-level constants (optional `gpu_kernels:`), each sourced in the profile. When
  // present, sim/gpu_kernel_model.hpp costs the GPU's ops (GEMM tiles and waves over the SMs,
  // streaming kernels at an achievable HBM fraction, flash attention at its measured efficiency)
  // instead of the roofline of `efficiency:`; a calibrated curve still wins over both.
  struct GpuKernels {
    int sm_count = 0;                   // streaming multiprocessors (wave size of a GEMM)
    double gemm_efficiency = 0;         // best large 16-bit GEMM, fraction of the dense peak
    std::array<std::int64_t, 3> gemm_efficiency_shape{};  // the m, n, k it was measured at
    // FP8 GEMMs at that shape, fraction of the FP8 peak (0: gemm_efficiency, the 16-bit one's).
    double fp8_gemm_efficiency = 0;
    // The measured efficiency a GEMM computing in `dtype` is held to.
    double gemm_efficiency_for(DType dtype) const {
      return dtype == DType::fp8 && fp8_gemm_efficiency > 0 ? fp8_gemm_efficiency : gemm_efficiency;
    }
    double memory_efficiency = 0;       // streaming kernels, fraction of the HBM bandwidth
    double flash_fwd_efficiency = 0;    // flash attention forward, fraction of the dense peak
    double flash_bwd_efficiency = 0;    // flash attention backward
    // FlashAttention's major version the two efficiencies measure (0: not said), and the speed of
    // the version before it relative to them (0: not known): a scenario may ask for either.
    int flash_version = 0;
    double flash_previous_version_speed = 0;
    // The version a run asking for `requested` gets (0: the profile's own).
    int flash_version_for(int requested) const { return requested > 0 ? requested : flash_version; }
    // The speed of FlashAttention `version` relative to the efficiencies above; 0 when the profile
    // has no figure for it. Version 0 is the profile's own.
    double flash_speed(int version) const;
    bool present() const { return sm_count > 0; }
  } gpu_kernels;

  // What the profile's numbers rest on, in a sentence (optional `basis:`), printed by simulate,
  // search and the report: "datasheet peaks; kernel efficiencies from published measurements;
  // validation/: ..." A calibrated profile says so through `calibrated:` instead.
  std::string basis;
  // `basis`, or the calibration's machine and date, or "datasheet peaks, estimated efficiencies".
  std::string basis_text() const;

  // Where a calibrated profile came from (optional `calibrated:`; empty when not calibrated).
  struct Provenance {
    std::string machine;        // host name
    std::string cpu_model;      // /proc/cpuinfo "model name"
    std::string accelerator;    // GPU name, "" for a CPU backend
    std::string backend;        // "cpu", "cuda"
    std::string date;           // ISO 8601, UTC
    std::string tandem_commit;  // git commit of the tandem that calibrated
    int cores = 0;              // cores the calibrating process could use (common/usable_cores.hpp)
    std::string kernel;         // uname -r: a hypervisor's guest kernel names it
    std::string machine_id;     // this installation in this boot (calibration/provenance.hpp)
  } calibrated;

  FlopsPerSecond peak_flops_per_s(DType dtype) const;  // int32 -> the fp32 peak

  bool is_gpu() const { return kind == "gpu"; }
  // Achievable rates of an op kind: peak x efficiency (compute kinds; others give the peak).
  FlopsPerSecond achievable_flops_per_s(OpKind op, DType dtype) const {
    return peak_flops_per_s(dtype) * flop_efficiency[static_cast<int>(op)];
  }
  BytesPerSecond achievable_bytes_per_s(OpKind op) const {
    return memory_bandwidth_bytes_per_s * memory_efficiency[static_cast<int>(op)];
  }
};

// The efficiencies a profile gets for the kinds its `efficiency:` map leaves out
// (documented in device.cpp and platforms/devices/README.md). Non-compute kinds get 1.
struct OpEfficiency {
  double flops = 1;
  double memory = 1;
};
OpEfficiency default_efficiency(const std::string& device_kind, OpKind op);

// Loads one profile from YAML (errors name file, line, field).
DeviceProfile load_device_profile(const std::string& path);

// Finds platforms/devices/<name>.yaml (case-insensitive name, file stem) and loads it.
// `search_dir` defaults to the bundled platforms/devices.
// A name containing '/' or ending in ".yaml" is taken as a path. Unknown names raise an InputError
// (file = the folder searched, field "device") whose message lists the available profiles.
DeviceProfile find_device_profile(const std::string& name, const std::string& search_dir = "");

// The path find_device_profile would load, or "" when nothing matches (no error).
std::string device_profile_path(const std::string& name, const std::string& search_dir = "");
// The file stems of the profiles in a folder, sorted (the bundled folder by default).
std::vector<std::string> available_device_profiles(const std::string& search_dir = "");

// The bundled datasheet profile of a GPU named as the driver names it ("NVIDIA H200" ->
// "h200-sxm", "NVIDIA A100-SXM4-80GB" -> "a100-sxm-80gb"), or "" for a GPU without one.
std::string bundled_profile_of_gpu(const std::string& accelerator);

}  // namespace tandem
