// A profile's `gpu_kernels:` constants and `basis:` line (platforms/device.hpp): read, checked,
// and refused with file, line and field when wrong.
#include <gtest/gtest.h>

#include <cctype>
#include <string>

#include "common/input_error.hpp"
#include "platforms/device.hpp"
#include "tests/platforms/platform_test_support.hpp"

namespace tandem {
namespace {

using test::BadCase;
using test::TempDir;

const char* const kGood = R"(name: Test-GPU
kind: gpu
peak_fp32_tflops: 10
peak_bf16_tflops: 100
peak_fp16_tflops: 100
memory_bandwidth_gb_per_s: 1000
memory_capacity_gb: 24
idle_power_w: 30
busy_power_w: 300
launch_overhead_us: 3
gpu_kernels:
  sm_count: 100
  gemm_efficiency: 0.8
  gemm_efficiency_shape: [4096, 4096, 4096]
  memory_efficiency: 0.9
  flash_fwd_efficiency: 0.6
  flash_bwd_efficiency: 0.5
basis: "datasheet and two papers"
)";

TEST(GpuKernelsProfile, ReadsTheConstantsAndTheBasis) {
  TempDir dir;
  const DeviceProfile p = load_device_profile(dir.write("good.yaml", kGood));
  EXPECT_EQ(p.gpu_kernels.sm_count, 100);
  EXPECT_DOUBLE_EQ(p.gpu_kernels.gemm_efficiency, 0.8);
  EXPECT_EQ(p.gpu_kernels.gemm_efficiency_shape[2], 4096);
  EXPECT_DOUBLE_EQ(p.gpu_kernels.memory_efficiency, 0.9);
  EXPECT_DOUBLE_EQ(p.gpu_kernels.flash_fwd_efficiency, 0.6);
  EXPECT_DOUBLE_EQ(p.gpu_kernels.flash_bwd_efficiency, 0.5);
  EXPECT_EQ(p.basis_text(), "datasheet and two papers");
  // Without its own FP8 figure an FP8 GEMM is held to the 16-bit fraction; with one, to that.
  EXPECT_DOUBLE_EQ(p.gpu_kernels.gemm_efficiency_for(DType::fp8), 0.8);
  std::string with_fp8 = kGood;
  with_fp8.replace(with_fp8.find("  memory_efficiency"), 0, "  fp8_gemm_efficiency: 0.7\n");
  const DeviceProfile q = load_device_profile(dir.write("fp8.yaml", with_fp8));
  EXPECT_DOUBLE_EQ(q.gpu_kernels.gemm_efficiency_for(DType::fp8), 0.7);
  EXPECT_DOUBLE_EQ(q.gpu_kernels.gemm_efficiency_for(DType::bf16), 0.8);
}

TEST(GpuKernelsProfile, ACalibratedProfileNamesItsMachineAndDate) {
  DeviceProfile p;
  p.basis = "ignored once calibrated";
  p.calibrated.machine = "box1";
  p.calibrated.accelerator = "NVIDIA H200";
  p.calibrated.date = "2026-12-01T10:00:00Z";
  EXPECT_EQ(p.basis_text(), "calibrated on box1 (NVIDIA H200), 2026-12-01T10:00:00Z");
  EXPECT_NE(DeviceProfile{}.basis_text().find("not calibrated"), std::string::npos);
}

TEST(GpuKernelsProfile, EveryBundledGpuProfileThatHasThemSaysWhatItRestsOn) {
  for (const auto& name : available_device_profiles()) {
    const DeviceProfile p = find_device_profile(name);
    if (p.gpu_kernels.present()) EXPECT_FALSE(p.basis.empty()) << name;
  }
}

class GpuKernelsBadInput : public ::testing::TestWithParam<BadCase> {};

TEST_P(GpuKernelsBadInput, RaisesInputErrorAtTheRightPlace) {
  test::expect_input_error_at_the_right_place(kGood, GetParam(),
                                              [](const std::string& path) { load_device_profile(path); });
}

INSTANTIATE_TEST_SUITE_P(
    GpuKernelsProfile, GpuKernelsBadInput,
    ::testing::Values(
        BadCase{"efficiency above 1", "gemm_efficiency: 0.8", "gemm_efficiency: 1.3", "gpu_kernels.gemm_efficiency",
                "gemm_efficiency", "(0, 1]"},
        BadCase{"fp8 efficiency above 1", "gemm_efficiency: 0.8", "gemm_efficiency: 0.8\n  fp8_gemm_efficiency: 2",
                "gpu_kernels.fp8_gemm_efficiency", "fp8_gemm_efficiency", "(0, 1]"},
        BadCase{"zero sms", "sm_count: 100", "sm_count: 0", "gpu_kernels.sm_count", "sm_count", "must be"},
        BadCase{"missing constant", "  flash_bwd_efficiency: 0.5\n", "", "gpu_kernels.flash_bwd_efficiency",
                "gpu_kernels:", "missing required field"},
        BadCase{"shape not m n k", "[4096, 4096, 4096]", "[4096, 4096]", "gpu_kernels.gemm_efficiency_shape",
                "gemm_efficiency_shape", "must be [m, n, k]"},
        BadCase{"unknown constant", "sm_count: 100", "sm_count: 100\n  warp_size: 32", "gpu_kernels.warp_size",
                "warp_size", "unknown field"},
        BadCase{"on a cpu", "kind: gpu", "kind: cpu", "gpu_kernels", "gpu_kernels:", "only a gpu profile"}),
    [](const ::testing::TestParamInfo<BadCase>& info) {
      std::string name = info.param.what;
      for (char& ch : name) {
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      }
      return name;
    });

}  // namespace
}  // namespace tandem
