#include <gtest/gtest.h>

#include <string>

#include "common/input_error.hpp"
#include "platforms/cluster.hpp"
#include "platforms/device.hpp"
#include "tests/platforms/platform_test_support.hpp"

namespace tandem {
namespace {

using test::line_of;
using test::TempDir;

double eff_flops(const DeviceProfile& p, OpKind op) { return p.flop_efficiency[static_cast<int>(op)]; }
double eff_memory(const DeviceProfile& p, OpKind op) { return p.memory_efficiency[static_cast<int>(op)]; }

TEST(DeviceProfile, EveryBundledProfileLoads) {
  const auto names = available_device_profiles();
  ASSERT_EQ(names.size(), 9u);  // seven datasheet profiles, localhost-calibrated and h200-sxm-calibrated
  for (const auto& name : names) {
    SCOPED_TRACE(name);
    const DeviceProfile p = find_device_profile(name);
    EXPECT_FALSE(p.name.empty());
    EXPECT_TRUE(p.kind == "gpu" || p.kind == "cpu");
    EXPECT_GT(p.peak_fp32_flops_per_s, 0);
    EXPECT_GE(p.peak_bf16_flops_per_s, p.peak_fp32_flops_per_s);
    EXPECT_GT(p.memory_bandwidth_bytes_per_s, 0);
    EXPECT_GT(p.memory_capacity_bytes, 0);
    EXPECT_GT(p.busy_power_w, p.idle_power_w);
    EXPECT_GT(p.price_per_hour_usd, 0);
    for (int k = 0; k < kOpKindCount; ++k) {
      EXPECT_GT(p.flop_efficiency[k], 0);
      EXPECT_LE(p.flop_efficiency[k], 1);
      EXPECT_GT(p.memory_efficiency[k], 0);
      EXPECT_LE(p.memory_efficiency[k], 1);
    }
  }
}

TEST(DeviceProfile, NumbersMatchFacts) {
  // FACTS.md, "Devices" table (dense, no sparsity).
  const DeviceProfile v100 = find_device_profile("v100-sxm2-32gb");
  EXPECT_EQ(v100.peak_fp16_flops_per_s, 125e12);
  EXPECT_EQ(v100.peak_fp32_flops_per_s, 15.7e12);
  EXPECT_EQ(v100.peak_bf16_flops_per_s, 15.7e12);  // Volta tensor cores have no bf16
  EXPECT_EQ(v100.memory_bandwidth_bytes_per_s, 900e9);
  EXPECT_EQ(v100.memory_capacity_bytes, 32e9);
  EXPECT_EQ(v100.busy_power_w, 300);

  const DeviceProfile a100_40 = find_device_profile("a100-sxm-40gb");
  EXPECT_EQ(a100_40.peak_bf16_flops_per_s, 312e12);
  EXPECT_EQ(a100_40.peak_fp16_flops_per_s, 312e12);
  EXPECT_EQ(a100_40.peak_fp32_flops_per_s, 19.5e12);
  EXPECT_EQ(a100_40.memory_bandwidth_bytes_per_s, 1555e9);
  EXPECT_EQ(a100_40.memory_capacity_bytes, 40e9);
  EXPECT_EQ(a100_40.busy_power_w, 400);

  const DeviceProfile a100_80 = find_device_profile("a100-sxm-80gb");
  EXPECT_EQ(a100_80.peak_bf16_flops_per_s, 312e12);
  EXPECT_EQ(a100_80.memory_bandwidth_bytes_per_s, 2039e9);
  EXPECT_EQ(a100_80.memory_capacity_bytes, 80e9);

  const DeviceProfile h100 = find_device_profile("h100-sxm");
  EXPECT_EQ(h100.peak_bf16_flops_per_s, 989e12);
  EXPECT_EQ(h100.peak_fp16_flops_per_s, 989e12);
  EXPECT_EQ(h100.peak_fp32_flops_per_s, 67e12);
  EXPECT_EQ(h100.memory_bandwidth_bytes_per_s, 3350e9);
  EXPECT_EQ(h100.memory_capacity_bytes, 80e9);
  EXPECT_EQ(h100.busy_power_w, 700);

  const DeviceProfile h200 = find_device_profile("h200-sxm");
  EXPECT_EQ(h200.peak_bf16_flops_per_s, 989e12);
  EXPECT_EQ(h200.peak_fp32_flops_per_s, 67e12);
  EXPECT_EQ(h200.memory_bandwidth_bytes_per_s, 4800e9);
  EXPECT_EQ(h200.memory_capacity_bytes, 141e9);
  EXPECT_EQ(h200.busy_power_w, 700);

  const DeviceProfile cpu = find_device_profile("cpu-generic");
  EXPECT_EQ(cpu.kind, "cpu");
  EXPECT_DOUBLE_EQ(cpu.peak_fp32_flops_per_s, 2.0 * 8 * 2 * 3e9);  // 2 FMA x 8 lanes x 2 x 3 GHz
  EXPECT_EQ(cpu.peak_bf16_flops_per_s, cpu.peak_fp32_flops_per_s);
}

TEST(DeviceProfile, PeakPerDtype) {
  const DeviceProfile h100 = find_device_profile("h100-sxm");
  EXPECT_EQ(h100.peak_flops_per_s(DType::fp32), 67e12);
  EXPECT_EQ(h100.peak_flops_per_s(DType::bf16), 989e12);
  EXPECT_EQ(h100.peak_flops_per_s(DType::fp16), 989e12);
  EXPECT_EQ(h100.peak_flops_per_s(DType::int32), 67e12);
  EXPECT_DOUBLE_EQ(h100.achievable_flops_per_s(OpKind::gemm, DType::bf16), 0.75 * 989e12);
  EXPECT_DOUBLE_EQ(h100.achievable_bytes_per_s(OpKind::elementwise), 0.85 * 3350e9);
  EXPECT_DOUBLE_EQ(h100.launch_overhead_s, 4e-6);
}

TEST(DeviceProfile, EfficiencyDefaultsAndOverrides) {
  const DeviceProfile h100 = find_device_profile("h100-sxm");  // no efficiency map: all defaults
  EXPECT_EQ(eff_flops(h100, OpKind::gemm), 0.75);
  EXPECT_EQ(eff_flops(h100, OpKind::attention), 0.60);
  EXPECT_EQ(eff_memory(h100, OpKind::norm), 0.85);
  EXPECT_EQ(eff_memory(h100, OpKind::embedding), 0.70);
  EXPECT_EQ(eff_flops(h100, OpKind::all_reduce), 1.0);  // non-compute kinds: neutral

  const DeviceProfile h200 = find_device_profile("h200-sxm");  // gemm and memcpy measured
  EXPECT_EQ(eff_flops(h200, OpKind::gemm), 0.79);
  EXPECT_EQ(eff_memory(h200, OpKind::memcpy), 0.90);
  EXPECT_EQ(eff_flops(h200, OpKind::memcpy), default_efficiency("gpu", OpKind::memcpy).flops);
  EXPECT_EQ(eff_flops(h200, OpKind::attention), 0.60);

  const DeviceProfile cpu = find_device_profile("cpu-generic");
  EXPECT_EQ(eff_flops(cpu, OpKind::gemm), default_efficiency("cpu", OpKind::gemm).flops);
  EXPECT_NE(default_efficiency("cpu", OpKind::gemm).flops, default_efficiency("gpu", OpKind::gemm).flops);
}

TEST(DeviceProfile, FoundByStemOrInnerNameIgnoringCase) {
  EXPECT_EQ(find_device_profile("H100-SXM").name, "H100-SXM");
  EXPECT_EQ(find_device_profile("h100-sxm").name, "H100-SXM");
  EXPECT_EQ(find_device_profile("A100-sxm-80GB").name, "A100-SXM-80GB");
  EXPECT_EQ(find_device_profile("CPU-Generic").kind, "cpu");
  const std::string path = bundled_dir("platforms/devices") + "/h200-sxm.yaml";
  EXPECT_EQ(find_device_profile(path).name, "H200-SXM");
  EXPECT_EQ(find_device_profile(path).file, path);
}

TEST(DeviceProfile, InnerNameMatchesInAnyFolder) {
  TempDir dir;
  const std::string text = R"(name: MyAccel
kind: gpu
peak_fp32_tflops: 10
peak_bf16_tflops: 100
peak_fp16_tflops: 100
memory_bandwidth_gb_per_s: 1000
memory_capacity_gb: 24
idle_power_w: 30
busy_power_w: 300
launch_overhead_us: 3
)";
  dir.write("accel-v1.yaml", text);
  dir.write("broken.yaml", "name: [unclosed\n");  // skipped while searching by inner name
  EXPECT_EQ(find_device_profile("myaccel", dir.path().string()).peak_bf16_flops_per_s, 100e12);
  EXPECT_EQ(find_device_profile("ACCEL-V1", dir.path().string()).memory_capacity_bytes, 24e9);
  EXPECT_EQ(find_device_profile("accel-v1", dir.path().string()).price_per_hour_usd, 0);  // optional
}

TEST(DeviceProfile, UnknownDeviceListsTheAvailableOnes) {
  try {
    find_device_profile("tpu-v9");
    FAIL() << "no InputError";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.field(), "device");
    EXPECT_NE(what.find("tpu-v9"), std::string::npos) << what;
    EXPECT_NE(what.find("h100-sxm"), std::string::npos) << what;
    EXPECT_NE(what.find("cpu-generic"), std::string::npos) << what;
  }
  EXPECT_THROW(find_device_profile("/no/such/profile.yaml"), InputError);
}

// ---- bad input: each class names the file, the line and the field ----

const char* const kGood = R"(name: Test-GPU
kind: gpu
peak_fp32_tflops: 10
peak_bf16_tflops: 100
peak_fp16_tflops: 100
memory_bandwidth_gb_per_s: 1000
memory_capacity_gb: 24
idle_power_w: 30
busy_power_w: 300
price_per_hour_usd: 1.5
launch_overhead_us: 3
efficiency:
  gemm: { flops: 0.8, memory: 0.9 }
  norm: { memory: 0.7 }
)";

using test::BadCase;

class DeviceProfileBadInput : public ::testing::TestWithParam<BadCase> {};

TEST_P(DeviceProfileBadInput, RaisesInputErrorAtTheRightPlace) {
  test::expect_input_error_at_the_right_place(kGood, GetParam(),
                                              [](const std::string& path) { load_device_profile(path); });
}

INSTANTIATE_TEST_SUITE_P(
    DeviceProfile, DeviceProfileBadInput,
    ::testing::Values(
        BadCase{"yaml syntax", "kind: gpu", "kind: [gpu", "kind[1]", "peak_fp32_tflops", "YAML syntax error"},
        BadCase{"missing field", "memory_capacity_gb: 24\n", "", "memory_capacity_gb", "name:",
                "missing required field"},
        BadCase{"negative bandwidth", "memory_bandwidth_gb_per_s: 1000", "memory_bandwidth_gb_per_s: -1000",
                "memory_bandwidth_gb_per_s", "memory_bandwidth_gb_per_s", "must be positive"},
        BadCase{"zero peak", "peak_bf16_tflops: 100", "peak_bf16_tflops: 0", "peak_bf16_tflops",
                "peak_bf16_tflops", "must be positive"},
        BadCase{"not a number", "idle_power_w: 30", "idle_power_w: thirty", "idle_power_w", "idle_power_w",
                "expected a number"},
        BadCase{"unknown field", "launch_overhead_us: 3", "launch_overhead_us: 3\nclock_ghz: 1.8", "clock_ghz",
                "clock_ghz", "unknown field"},
        BadCase{"bad kind", "kind: gpu", "kind: tpu", "kind", "kind:", "must be gpu or cpu"},
        BadCase{"busy below idle", "busy_power_w: 300", "busy_power_w: 20", "busy_power_w", "busy_power_w",
                "must not be below idle_power_w"},
        BadCase{"efficiency above 1", "gemm: { flops: 0.8", "gemm: { flops: 1.2", "efficiency.gemm.flops",
                "gemm:", "(0, 1]"},
        BadCase{"efficiency zero", "norm: { memory: 0.7 }", "norm: { memory: 0 }", "efficiency.norm.memory",
                "norm:", "(0, 1]"},
        BadCase{"efficiency unknown kind", "norm: { memory: 0.7 }", "all_reduce: { memory: 0.7 }",
                "efficiency.all_reduce", "all_reduce", "unknown field"},
        BadCase{"efficiency unknown key", "norm: { memory: 0.7 }", "norm: { latency: 0.7 }",
                "efficiency.norm.latency", "norm:", "unknown field"},
        BadCase{"curve unknown kernel class", "launch_overhead_us: 3",
                "launch_overhead_us: 3\nefficiency_curves:\n  softmax.fwd: { bound: flops, max_efficiency: 0.5, half_work: 0 }",
                "efficiency_curves.softmax.fwd", "softmax.fwd", "unknown kernel class"},
        BadCase{"curve bad bound", "launch_overhead_us: 3",
                "launch_overhead_us: 3\nefficiency_curves:\n  gemm: { bound: cache, max_efficiency: 0.5, half_work: 0 }",
                "efficiency_curves.gemm.bound", "bound: cache", "must be flops or memory"},
        BadCase{"curve zero efficiency", "launch_overhead_us: 3",
                "launch_overhead_us: 3\nefficiency_curves:\n  elementwise.gelu: { bound: memory, max_efficiency: 0, half_work: 0 }",
                "efficiency_curves.elementwise.gelu.max_efficiency", "elementwise.gelu", "must be positive"}),
    [](const ::testing::TestParamInfo<BadCase>& info) {
      std::string name = info.param.what;
      for (char& ch : name) {
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      }
      return name;
    });

TEST(DeviceProfile, GoodTemplateLoads) {
  TempDir dir;
  const DeviceProfile p = load_device_profile(dir.write("good.yaml", kGood));
  EXPECT_EQ(p.name, "Test-GPU");
  EXPECT_EQ(p.flop_efficiency[static_cast<int>(OpKind::gemm)], 0.8);
  EXPECT_EQ(p.memory_efficiency[static_cast<int>(OpKind::gemm)], 0.9);
  EXPECT_EQ(p.memory_efficiency[static_cast<int>(OpKind::norm)], 0.7);
  EXPECT_EQ(p.flop_efficiency[static_cast<int>(OpKind::norm)], default_efficiency("gpu", OpKind::norm).flops);
  EXPECT_EQ(p.price_per_hour_usd, 1.5);
}

TEST(DeviceProfile, MissingFileIsAnInputError) {
  try {
    load_device_profile("/no/such/file.yaml");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), "/no/such/file.yaml");
    EXPECT_EQ(e.line(), 0);
  }
}

}  // namespace
}  // namespace tandem
