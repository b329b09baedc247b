#include "analysis/calibration/profile_yaml.hpp"

#include "analysis/format.hpp"

namespace tandem::calibration {

namespace {

// Ten significant digits: loads back to within 1e-10 relative, still readable.
std::string num(double value) { return printf_string("%.10g", value); }

// A YAML double-quoted scalar (provenance strings come from the machine: quote them all).
std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

constexpr OpKind kComputeKinds[] = {OpKind::gemm,        OpKind::attention, OpKind::norm,
                                    OpKind::elementwise, OpKind::embedding, OpKind::loss,
                                    OpKind::optimizer,   OpKind::memcpy};

}  // namespace

std::string device_profile_yaml(const DeviceProfile& p, const std::string& description) {
  std::string y;
  y += "name: " + quoted(p.name) + "\n";
  y += "description: " + quoted(description) + "\n";
  y += "kind: " + p.kind + "\n";
  y += "peak_fp32_tflops: " + num(p.peak_fp32_flops_per_s / kTera) + "\n";
  y += "peak_bf16_tflops: " + num(p.peak_bf16_flops_per_s / kTera) + "\n";
  y += "peak_fp16_tflops: " + num(p.peak_fp16_flops_per_s / kTera) + "\n";
  y += "memory_bandwidth_gb_per_s: " + num(p.memory_bandwidth_bytes_per_s / kGB) + "\n";
  y += "memory_capacity_gb: " + num(p.memory_capacity_bytes / kGB) + "\n";
  y += "idle_power_w: " + num(p.idle_power_w) + "\n";
  y += "busy_power_w: " + num(p.busy_power_w) + "\n";
  y += "price_per_hour_usd: " + num(p.price_per_hour_usd) + "\n";
  y += "launch_overhead_us: " + num(p.launch_overhead_s * 1e6) + "\n";
  if (p.core_handoff_s > 0) y += "core_handoff_us: " + num(p.core_handoff_s * 1e6) + "\n";
  if (p.core_wake_s > 0) y += "core_wake_us: " + num(p.core_wake_s * 1e6) + "\n";
  if (p.alone_kernel_time_fraction != 1)
    y += "alone_kernel_time_fraction: " + num(p.alone_kernel_time_fraction) + "\n";
  if (p.slowest_core_kernel_time_factor != 1)
    y += "slowest_core_kernel_time_factor: " + num(p.slowest_core_kernel_time_factor) + "\n";
  y += "efficiency:\n";
  for (OpKind kind : kComputeKinds) {
    const int k = static_cast<int>(kind);
    y += std::string("  ") + to_string(kind) + ": { flops: " + num(p.flop_efficiency[k]) +
         ", memory: " + num(p.memory_efficiency[k]) + " }\n";
  }
  bool any_curve = false;
  for (const auto& [name, curve] : p.efficiency_curves) {
    if (!any_curve) {
      y += "# eff(x) = max_efficiency * x / (x + half_work), x = the op's FLOPs (bound: flops) or\n"
           "# bytes (bound: memory); time = launch overhead + (x + half_work) / (peak * max_efficiency)\n"
           "efficiency_curves:\n";
      any_curve = true;
    }
    y += "  " + name + ": { bound: " + to_string(curve.bound) + ", max_efficiency: " + num(curve.max_efficiency) +
         ", half_work: " + num(curve.half_work) + " }\n";
  }
  const DeviceProfile::Provenance& c = p.calibrated;
  if (!c.machine.empty() || !c.date.empty()) {
    y += "calibrated:\n";
    y += "  machine: " + quoted(c.machine) + "\n";
    y += "  cpu_model: " + quoted(c.cpu_model) + "\n";
    if (c.cores > 0) y += "  cores: " + std::to_string(c.cores) + "\n";
    if (!c.kernel.empty()) y += "  kernel: " + quoted(c.kernel) + "\n";
    if (!c.machine_id.empty()) y += "  machine_id: " + quoted(c.machine_id) + "\n";
    if (!c.accelerator.empty()) y += "  accelerator: " + quoted(c.accelerator) + "\n";
    y += "  backend: " + quoted(c.backend) + "\n";
    y += "  date: " + quoted(c.date) + "\n";
    y += "  tandem_commit: " + quoted(c.tandem_commit) + "\n";
  }
  return y;
}

std::string cluster_yaml(const CalibratedCluster& c) {
  std::string y;
  y += "name: " + quoted(c.name) + "\n";
  y += "description: " + quoted(c.description) + "\n";
  y += "node_groups:\n";
  y += "  - name: cpu\n";
  y += "    device: " + quoted(c.device) + "\n";
  y += "    nodes: 1\n";
  y += "    devices_per_node: " + std::to_string(c.devices_per_node) + "\n";
  if (c.shared_cores > 0) {
    y += "    shared_cores: " + std::to_string(c.shared_cores) + "\n";
    y += "    background_load: 0   # cores other programs keep busy; set it to the machine's load\n";
  }
  y += "    intra_node:\n";
  y += "      fabric: shared_memory\n";
  y += "      bandwidth_gb_per_s: " + num(c.intra_link.bandwidth_bytes_per_s / kGB) + "\n";
  y += "      latency_us: " + num(c.intra_link.latency_s * 1e6) + "\n";
  y += "      bus: { bandwidth_gb_per_s: " + num(c.bus.bandwidth_bytes_per_s / kGB) +
       ", latency_us: " + num(c.bus.latency_s * 1e6) + " }\n";
  if (!c.collectives.empty()) {
    y += "      # what each collective cost the last member to arrive (it does every member's work)\n";
    y += "      collectives:\n";
    for (const CollectiveCost& k : c.collectives)
      y += "        - { kind: " + k.kind + ", ranks: " + std::to_string(k.ranks) + ", latency_us: " +
           num(k.latency_s * 1e6) + ", bandwidth_gb_per_s: " + num(k.bandwidth_bytes_per_s / kGB) + " }\n";
  }
  return y;
}

}  // namespace tandem::calibration
