// `calibrate --backend cuda`'s measurements (exec/cuda/calibration/cuda_microbenchmarks.hpp): a
// compute workload is a real step of the CUDA runtime, timed op by op where the step placed each
// op, with the gaps between kernels as the backend's per-op cost. Needs a GPU (skips without).
#include <gtest/gtest.h>

#include "analysis/calibration/workloads.hpp"
#include "exec/cuda/calibration/cuda_microbenchmarks.hpp"
#include "tests/kernels/cuda/cuda_test_support.hpp"

namespace tandem::exec::cuda {
namespace {

TEST(CudaCalibration, AComputeWorkloadIsARealStepTimedOpByOpWithItsGaps) {
  TANDEM_REQUIRE_GPU();
  CudaCalibrationBench bench(1);
  const calibration::Workload workload =
      calibration::compute_workloads(/*quick=*/true, DType::bf16, 1, calibration::WorkloadScale::gpu).front();
  const calibration::StepMeasurement step = bench.measure(workload, /*warmup=*/1, /*iterations=*/2);
  ASSERT_FALSE(step.ops.empty());
  Seconds kernels_s = 0;
  int gemms = 0;
  for (const calibration::OpTiming& op : step.ops) {
    if (is_communication(op.kind)) continue;
    EXPECT_GT(op.seconds, 0) << op.label;
    kernels_s += op.seconds;
    gemms += op.kind == OpKind::gemm;
  }
  EXPECT_GT(gemms, 0);
  // The step holds its kernels and the gaps between them (dispatch, zero-fill of new tensors).
  EXPECT_GE(step.step_s, kernels_s);
  EXPECT_GE(step.launch_gap_s, 0);
  EXPECT_LT(step.launch_gap_s, step.step_s);
}

}  // namespace
}  // namespace tandem::exec::cuda
