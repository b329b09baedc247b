#include "platforms/device.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "common/input_error.hpp"
#include "common/yaml_reader.hpp"
#include "platforms/cluster.hpp"  // bundled_dir
#include "platforms/device_fields.hpp"
#include "platforms/kernel_class.hpp"

namespace tandem {
namespace fs = std::filesystem;

namespace {

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

// The compute kinds an `efficiency:` map may name, in OpKind order.
constexpr OpKind kComputeKinds[] = {OpKind::gemm,    OpKind::attention, OpKind::norm,
                                    OpKind::elementwise, OpKind::embedding, OpKind::loss,
                                    OpKind::optimizer,   OpKind::memcpy};

std::string devices_dir_or_default(const std::string& search_dir) {
  return search_dir.empty() ? bundled_dir("platforms/devices") : search_dir;
}

bool looks_like_path(const std::string& name) {
  return name.find('/') != std::string::npos ||
         (name.size() > 5 && name.compare(name.size() - 5, 5, ".yaml") == 0) ||
         (name.size() > 4 && name.compare(name.size() - 4, 4, ".yml") == 0);
}

std::vector<fs::path> profile_files(const std::string& dir) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const auto ext = entry.path().extension().string();
    if (entry.is_regular_file() && (ext == ".yaml" || ext == ".yml")) files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

// Defaults for kinds a profile's `efficiency:` map leaves out. The figures are deliberately
// round first guesses, to be replaced by calibration:
//   GPU  gemm        flops 0.75  memory 0.85  (cuBLAS on large bf16 GEMMs reaches 70-80% of the
//                                              dense tensor peak: FACTS.md, ~780/989 on H200)
//        attention   flops 0.60  memory 0.85  (FlashAttention-2 forward+backward 50-70%)
//        norm, elementwise, loss, optimizer
//                    flops 0.50  memory 0.85  (bandwidth-bound; FACTS.md: 4.3 of 4.8 TB/s copy)
//        embedding   flops 0.50  memory 0.70  (gathers: irregular access)
//        memcpy      flops 1     memory 0.90
//   CPU  gemm        flops 0.70  memory 0.80  (a blocked fp32 SGEMM per core)
//        attention   flops 0.40  memory 0.80  (unfused: softmax and two GEMMs)
//        norm, elementwise, loss, optimizer
//                    flops 0.30  memory 0.80
//        embedding   flops 0.30  memory 0.60
//        memcpy      flops 1     memory 0.80
// The flops fraction of bandwidth-bound kinds rarely binds; it is there so that a kernel with
// an unusual arithmetic intensity is not costed at the tensor-core peak.
OpEfficiency default_efficiency(const std::string& device_kind, OpKind op) {
  const bool cpu = device_kind == "cpu";
  switch (op) {
    case OpKind::gemm: return cpu ? OpEfficiency{0.70, 0.80} : OpEfficiency{0.75, 0.85};
    case OpKind::attention: return cpu ? OpEfficiency{0.40, 0.80} : OpEfficiency{0.60, 0.85};
    case OpKind::norm:
    case OpKind::elementwise:
    case OpKind::loss:
    case OpKind::optimizer: return cpu ? OpEfficiency{0.30, 0.80} : OpEfficiency{0.50, 0.85};
    case OpKind::embedding: return cpu ? OpEfficiency{0.30, 0.60} : OpEfficiency{0.50, 0.70};
    case OpKind::memcpy: return cpu ? OpEfficiency{1.0, 0.80} : OpEfficiency{1.0, 0.90};
    default: return OpEfficiency{1.0, 1.0};
  }
}

const char* to_string(BoundSide side) { return side == BoundSide::flops ? "flops" : "memory"; }

const EfficiencyCurve* DeviceProfile::curve_for(const ComputeOp& op) const {
  if (efficiency_curves.empty()) return nullptr;  // the common case: no string built per op
  auto it = efficiency_curves.find(kernel_class(op));
  if (it == efficiency_curves.end()) it = efficiency_curves.find(to_string(op.kind));
  return it == efficiency_curves.end() ? nullptr : &it->second;
}

double DeviceProfile::GpuKernels::flash_speed(int version) const {
  if (flash_version_for(version) == flash_version) return 1.0;
  if (flash_version > 0 && version == flash_version - 1) return flash_previous_version_speed;
  return 0.0;
}

std::string DeviceProfile::basis_text() const {
  if (!calibrated.date.empty()) {
    const std::string what = !calibrated.accelerator.empty() ? calibrated.accelerator : calibrated.cpu_model;
    return "calibrated on " + (calibrated.machine.empty() ? std::string("an unnamed machine") : calibrated.machine) +
           (what.empty() ? "" : " (" + what + ")") + ", " + calibrated.date;
  }
  if (!basis.empty()) return basis;
  return "datasheet peaks with estimated efficiencies (not calibrated, not validated)";
}

FlopsPerSecond DeviceProfile::peak_flops_per_s(DType dtype) const {
  switch (dtype) {
    case DType::fp32: return peak_fp32_flops_per_s;
    case DType::bf16: return peak_bf16_flops_per_s;
    case DType::fp16: return peak_fp16_flops_per_s;
    case DType::int32: return peak_fp32_flops_per_s;
    // A CPU emulates FP8 GEMMs in fp32; a GPU without FP8 tensor cores has none (0).
    case DType::fp8: return !is_gpu() && !(peak_fp8_flops_per_s > 0) ? peak_fp32_flops_per_s : peak_fp8_flops_per_s;
  }
  return peak_fp32_flops_per_s;
}

namespace {

// `efficiency_curves.<kind>: { bound: flops|memory, max_efficiency: e, half_work: x }`. The
// maximum is relative to the profile's peak of the bound side and may exceed 1: a CPU kernel whose
// working set stays in cache streams faster than the DRAM bandwidth the profile states.
EfficiencyCurve read_curve(const YamlNode& node) {
  node.only_keys(device_fields::kCurve);
  EfficiencyCurve curve;
  const YamlNode bound = node["bound"];
  const std::string side = bound.as_string();
  if (side == "flops") curve.bound = BoundSide::flops;
  else if (side == "memory") curve.bound = BoundSide::memory;
  else bound.fail("must be flops or memory, got '" + side + "'");
  curve.max_efficiency = node["max_efficiency"].in(limits::kCurveMaxEfficiency);
  curve.half_work = node["half_work"].in(limits::kCurveHalfWork);
  return curve;
}

// `gpu_kernels: { sm_count, gemm_efficiency, memory_efficiency, flash_fwd_efficiency,
// flash_bwd_efficiency }`: the efficiencies are fractions of the datasheet peaks, in (0, 1].
DeviceProfile::GpuKernels read_gpu_kernels(const YamlNode& node) {
  node.only_keys(device_fields::kGpuKernels);
  // In (0, 1], and not subnormal: 1e-320 is "positive" yet divides every kernel's time to inf.
  auto share = [&](const char* key) { return node[key].in(limits::kEfficiencyFraction); };
  DeviceProfile::GpuKernels g;
  const long long sms = node["sm_count"].positive_int();
  if (sms > 4096) node["sm_count"].fail("must be at most 4096, got " + std::to_string(sms));
  g.sm_count = static_cast<int>(sms);
  g.gemm_efficiency = share("gemm_efficiency");
  const YamlNode shape = node["gemm_efficiency_shape"];
  const std::vector<YamlNode> dims = shape.items();
  if (dims.size() != 3) shape.fail("must be [m, n, k], the GEMM shape gemm_efficiency was measured at");
  for (int i = 0; i < 3; ++i) {
    g.gemm_efficiency_shape[i] = dims[i].positive_int();
    if (g.gemm_efficiency_shape[i] > (1LL << 24)) dims[i].fail("must be at most 16777216");
  }
  if (node.has("fp8_gemm_efficiency")) g.fp8_gemm_efficiency = share("fp8_gemm_efficiency");
  g.memory_efficiency = share("memory_efficiency");
  g.flash_fwd_efficiency = share("flash_fwd_efficiency");
  g.flash_bwd_efficiency = share("flash_bwd_efficiency");
  if (node.has("flash_version")) g.flash_version = static_cast<int>(node["flash_version"].count(limits::kFlashAttentionVersion));
  if (node.has("flash_previous_version_speed")) {
    if (g.flash_version < 2)
      node["flash_previous_version_speed"].fail("needs flash_version 2 or 3: the version it compares with");
    g.flash_previous_version_speed = share("flash_previous_version_speed");
  }
  return g;
}

void read_provenance(const YamlNode& node, DeviceProfile::Provenance& p) {
  node.only_keys(device_fields::kProvenance);
  auto text = [&](const char* key) { return node.has(key) ? node.str(key) : std::string(); };
  p.machine = text("machine");
  p.cpu_model = text("cpu_model");
  if (node.has("cores")) {
    const long long cores = node["cores"].positive_int();
    if (cores > 1 << 20) node["cores"].fail("must be at most " + std::to_string(1 << 20) + ", got " + std::to_string(cores));
    p.cores = static_cast<int>(cores);
  }
  p.kernel = text("kernel");
  p.machine_id = text("machine_id");
  p.accelerator = text("accelerator");
  p.backend = text("backend");
  p.date = text("date");
  p.tandem_commit = text("tandem_commit");
}


}  // namespace

DeviceProfile load_device_profile(const std::string& path) {
  const YamlNode root = YamlNode::load_file(path);
  root.only_keys(device_fields::kRoot);
  DeviceProfile p;
  p.file = path;
  p.name = root.str("name");
  if (p.name.empty()) root["name"].fail("must not be empty");
  if (auto d = root.get("description")) d->as_string();

  const YamlNode kind = root["kind"];
  p.kind = kind.as_string();
  if (p.kind != "gpu" && p.kind != "cpu") kind.fail("must be gpu or cpu, got '" + p.kind + "'");

  p.peak_fp32_flops_per_s = root["peak_fp32_tflops"].in(limits::kPeakTflops) * kTera;
  p.peak_bf16_flops_per_s = root["peak_bf16_tflops"].in(limits::kPeakTflops) * kTera;
  p.peak_fp16_flops_per_s = root["peak_fp16_tflops"].in(limits::kPeakTflops) * kTera;
  if (auto fp8 = root.get("peak_fp8_tflops")) p.peak_fp8_flops_per_s = fp8->in(limits::kPeakTflops) * kTera;
  p.memory_bandwidth_bytes_per_s = root["memory_bandwidth_gb_per_s"].in(limits::kMemoryBandwidthGbPerS) * kGB;
  p.memory_capacity_bytes = root["memory_capacity_gb"].in(limits::kMemoryCapacityGb) * kGB;
  p.idle_power_w = root["idle_power_w"].in(limits::kPowerW);
  const YamlNode busy = root["busy_power_w"];
  p.busy_power_w = busy.in(limits::kPowerW);
  if (!(p.busy_power_w > 0)) busy.fail("must be positive, got " + busy.as_string());
  if (p.busy_power_w < p.idle_power_w) {
    busy.fail("must not be below idle_power_w (" + root["idle_power_w"].as_string() + ")");
  }
  if (auto price = root.get("price_per_hour_usd")) p.price_per_hour_usd = price->in(limits::kPricePerHourUsd);
  p.launch_overhead_s = root["launch_overhead_us"].in(limits::kOverheadUs) * 1e-6;
  if (root.has("core_handoff_us")) p.core_handoff_s = root["core_handoff_us"].in(limits::kOverheadUs) * 1e-6;
  if (root.has("core_wake_us")) p.core_wake_s = root["core_wake_us"].in(limits::kOverheadUs) * 1e-6;
  if (root.has("alone_kernel_time_fraction"))
    p.alone_kernel_time_fraction = root["alone_kernel_time_fraction"].in(limits::kAloneKernelTimeFraction);
  if (root.has("slowest_core_kernel_time_factor"))
    p.slowest_core_kernel_time_factor = root["slowest_core_kernel_time_factor"].in(limits::kSlowestCoreFactor);

  for (int i = 0; i < kOpKindCount; ++i) {
    const OpEfficiency e = default_efficiency(p.kind, static_cast<OpKind>(i));
    p.flop_efficiency[i] = e.flops;
    p.memory_efficiency[i] = e.memory;
  }
  if (auto eff = root.get("efficiency")) {
    eff->only_keys(device_fields::kEfficiency);
    for (OpKind op : kComputeKinds) {
      auto entry = eff->get(to_string(op));
      if (!entry) continue;
      entry->only_keys(device_fields::kEfficiencyEntry);
      const int i = static_cast<int>(op);
      if (auto f = entry->get("flops")) p.flop_efficiency[i] = f->in(limits::kEfficiencyFraction);
      if (auto m = entry->get("memory")) p.memory_efficiency[i] = m->in(limits::kEfficiencyFraction);
    }
  }
  if (auto curves = root.get("efficiency_curves")) {
    for (const auto& [key, entry] : curves->entries()) {
      OpKind kind;
      if (!kernel_class_kind(key, kind)) {
        entry.fail("unknown kernel class '" + key + "' (a compute kind, e.g. gemm, optionally "
                   "followed by .variant: elementwise.gelu, attention.fwd)");
      }
      p.efficiency_curves[key] = read_curve(entry);
    }
  }
  if (auto provenance = root.get("calibrated")) read_provenance(*provenance, p.calibrated);
  if (auto gpu = root.get("gpu_kernels")) {
    if (p.kind != "gpu") gpu->fail("only a gpu profile has gpu_kernels");
    p.gpu_kernels = read_gpu_kernels(*gpu);
  }
  if (auto basis = root.get("basis")) p.basis = basis->as_string();
  return p;
}

std::vector<std::string> available_device_profiles(const std::string& search_dir) {
  std::vector<std::string> names;
  for (const auto& file : profile_files(devices_dir_or_default(search_dir))) {
    names.push_back(file.stem().string());
  }
  return names;
}

std::string device_profile_path(const std::string& name, const std::string& search_dir) {
  if (looks_like_path(name)) {
    std::error_code ec;  // a name too long for the file system is "no such profile", not a throw
    return fs::exists(name, ec) ? name : "";
  }
  const auto files = profile_files(devices_dir_or_default(search_dir));
  const std::string wanted = lower(name);
  for (const auto& file : files) {
    if (lower(file.stem().string()) == wanted) return file.string();
  }
  // Second chance: the `name:` inside a profile ("H100-SXM" for h100-sxm.yaml). Files that do
  // not parse are skipped here; loading them by their own name reports their errors.
  for (const auto& file : files) {
    try {
      const YamlNode root = YamlNode::load_file(file.string());  // size-capped, like every input
      if (auto n = root.get("name"); n && lower(n->as_string()) == wanted) return file.string();
    } catch (const InputError&) {
    }
  }
  return "";
}

DeviceProfile find_device_profile(const std::string& name, const std::string& search_dir) {
  const std::string path = device_profile_path(name, search_dir);
  if (path.empty()) {
    const std::string dir = devices_dir_or_default(search_dir);
    if (looks_like_path(name)) throw InputError(name, 0, "device", "no such device profile file");
    std::string list;
    for (const auto& n : available_device_profiles(dir)) list += (list.empty() ? "" : ", ") + n;
    throw InputError(dir, 0, "device",
                     "unknown device '" + name + "' (available: " + (list.empty() ? "none" : list) +
                         ")");
  }
  return load_device_profile(path);
}

std::string bundled_profile_of_gpu(const std::string& accelerator) {
  std::string name = accelerator;
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  if (name.find("h200") != std::string::npos) return "h200-sxm";
  if (name.find("h100") != std::string::npos) return "h100-sxm";
  if (name.find("a100") != std::string::npos) return name.find("40gb") != std::string::npos ? "a100-sxm-40gb" : "a100-sxm-80gb";
  if (name.find("v100") != std::string::npos) return "v100-sxm2-32gb";
  return "";
}

}  // namespace tandem
