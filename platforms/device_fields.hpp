// The fields of a device profile (platforms/devices/*.yaml), section by section: what
// load_device_profile accepts (it checks keys against these tables) and what `tandem fields
// device` prints. Ranges are the ones the reader checks (common/input_limits.hpp).
#pragma once

#include "common/field_doc.hpp"

namespace tandem::device_fields {

inline constexpr FieldDoc kRoot[] = {
    {"name", "text", "required", "the device's name (\"H100-SXM\"); clusters may name it"},
    {"description", "text", "-", "free text"},
    {"kind", "gpu | cpu", "required", "sets the default efficiencies and which sections apply"},
    {"peak_fp32_tflops", "TFLOP/s", "required", "dense fp32 peak", &limits::kPeakTflops},
    {"peak_bf16_tflops", "TFLOP/s", "required", "dense bf16 peak (no sparsity)", &limits::kPeakTflops},
    {"peak_fp16_tflops", "TFLOP/s", "required", "dense fp16 peak (no sparsity)", &limits::kPeakTflops},
    {"peak_fp8_tflops", "TFLOP/s", "0 (no FP8)", "dense FP8 tensor-core peak (training.fp8)", &limits::kPeakTflops},
    {"memory_bandwidth_gb_per_s", "GB/s (1e9 bytes)", "required", "memory bandwidth",
     &limits::kMemoryBandwidthGbPerS},
    {"memory_capacity_gb", "GB (1e9 bytes)", "required", "memory capacity", &limits::kMemoryCapacityGb},
    {"idle_power_w", "W", "required", "power when idle", &limits::kPowerW},
    {"busy_power_w", "W", "required", "power when busy (not below idle_power_w)", &limits::kPowerW},
    {"price_per_hour_usd", "USD/h", "0 (unknown)", "price of one device-hour: cost per iteration, cost searches",
     &limits::kPricePerHourUsd},
    {"launch_overhead_us", "us", "required", "per kernel", &limits::kOverheadUs},
    {"core_handoff_us", "us", "0", "CPU threads sharing cores: a core passed between threads",
     &limits::kOverheadUs},
    {"core_wake_us", "us", "0", "CPU threads sharing cores: a thread woken onto an idle core",
     &limits::kOverheadUs},
    {"alone_kernel_time_fraction", "-", "1", "CPU threads sharing cores: kernel time of a rank alone over all cores busy",
     &limits::kAloneKernelTimeFraction},
    {"slowest_core_kernel_time_factor", "-", "1", "CPU threads sharing cores: slowest core's kernel time over the mean",
     &limits::kSlowestCoreFactor},
    {"efficiency", "section", "per kind (below)", "fraction of peak reached, per compute kind"},
    {"efficiency_curves", "section", "-", "calibrated curves per kernel class (tandem calibrate)"},
    {"calibrated", "section", "-", "where a calibrated profile was measured"},
    {"gpu_kernels", "section", "-", "gpu only: kernel-level constants (sim/gpu_kernel_model)"},
    {"basis", "text", "-", "what the numbers rest on, printed by simulate and search"},
};

// efficiency: one entry per compute kind; defaults as flops/memory fractions for each device kind
// (default_efficiency in device.cpp, held to these by tests/platforms/device_fields_test).
inline constexpr FieldDoc kEfficiency[] = {
    {"gemm", "section", "gpu 0.75/0.85, cpu 0.70/0.80", "matrix multiplies"},
    {"attention", "section", "gpu 0.60/0.85, cpu 0.40/0.80", "attention cores"},
    {"norm", "section", "gpu 0.50/0.85, cpu 0.30/0.80", "layer norms"},
    {"elementwise", "section", "gpu 0.50/0.85, cpu 0.30/0.80", "activations, dropout, residuals"},
    {"embedding", "section", "gpu 0.50/0.70, cpu 0.30/0.60", "embedding gathers"},
    {"loss", "section", "gpu 0.50/0.85, cpu 0.30/0.80", "cross-entropy"},
    {"optimizer", "section", "gpu 0.50/0.85, cpu 0.30/0.80", "optimizer steps"},
    {"memcpy", "section", "gpu 1.00/0.90, cpu 1.00/0.80", "copies"},
};

inline constexpr FieldDoc kEfficiencyEntry[] = {
    {"flops", "fraction", "the kind's default", "of the peak FLOP/s in the training dtype",
     &limits::kEfficiencyFraction},
    {"memory", "fraction", "the kind's default", "of the memory bandwidth", &limits::kEfficiencyFraction},
};

inline constexpr FieldDoc kCurve[] = {
    {"bound", "flops | memory", "required", "the side the curve is relative to"},
    {"max_efficiency", "fraction of peak", "required", "the plateau (above 1 when in cache)",
     &limits::kCurveMaxEfficiency},
    {"half_work", "FLOPs or bytes", "required", "the work that reaches half the plateau", &limits::kCurveHalfWork},
};

inline constexpr FieldDoc kGpuKernels[] = {
    {"sm_count", "count", "required", "streaming multiprocessors (a GEMM's wave size), at most 4096"},
    {"gemm_efficiency", "fraction", "required", "best large 16-bit GEMM, of the dense peak",
     &limits::kEfficiencyFraction},
    {"gemm_efficiency_shape", "[m, n, k]", "required", "the GEMM gemm_efficiency was measured at"},
    {"fp8_gemm_efficiency", "fraction", "gemm_efficiency", "FP8 GEMM at that shape, of the FP8 peak",
     &limits::kEfficiencyFraction},
    {"memory_efficiency", "fraction", "required", "streaming kernels, of the HBM bandwidth",
     &limits::kEfficiencyFraction},
    {"flash_fwd_efficiency", "fraction", "required", "flash attention forward, of the dense peak",
     &limits::kEfficiencyFraction},
    {"flash_bwd_efficiency", "fraction", "required", "flash attention backward, of the dense peak",
     &limits::kEfficiencyFraction},
    {"flash_version", "1 | 2 | 3", "-", "FlashAttention's major version the two efficiencies measure", nullptr,
     &limits::kFlashAttentionVersion},
    {"flash_previous_version_speed", "fraction", "-", "the version before it, relative to them",
     &limits::kEfficiencyFraction},
};

inline constexpr FieldDoc kProvenance[] = {
    {"machine", "text", "-", "host name"},        {"cpu_model", "text", "-", "the CPU"},
    {"cores", "count", "-", "cores of the machine"}, {"kernel", "text", "-", "operating system kernel"},
    {"machine_id", "text", "-", "/etc/machine-id"},  {"accelerator", "text", "-", "the GPU"},
    {"backend", "cpu | cuda", "-", "the backend measured"}, {"date", "text", "-", "when"},
    {"tandem_commit", "text", "-", "the commit measured"},
};

inline constexpr FieldSection kSections[] = {
    {"", kRoot},
    {"efficiency", kEfficiency},
    {"efficiency.<kind>", kEfficiencyEntry},
    {"efficiency_curves.<kernel class>", kCurve},
    {"gpu_kernels", kGpuKernels},
    {"calibrated", kProvenance},
};

}  // namespace tandem::device_fields
