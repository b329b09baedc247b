// `calibrate --backend cuda`'s fitting, on a simulated GPU whose curves are known: an H100 whose
// every kernel class has its own curve (GPU-sized fixed costs), a 4 us launch gap, and NCCL
// collectives and send/recv as the NCCL model times them on an 8-GPU NVLink 4 node. The fit must
// find the curves and the launch overhead again, and its per-kind alpha-beta fits must time large
// messages as NCCL does; one GPU alone fits its profile and no link.
#include <gtest/gtest.h>

#include <cmath>

#include "analysis/calibration/calibrate.hpp"
#include "sim/collectives/nccl_model.hpp"
#include "tests/analysis/calibration/simulated_device.hpp"

namespace tandem::calibration {
namespace {

sim::nccl::Fabric nvlink4_node() {
  sim::nccl::Fabric f;
  f.arch = sim::nccl::Arch::hopper;
  f.nvlinks_per_gpu = 18;
  f.nvswitch = true;
  return f;
}

Seconds nccl_seconds(OpKind kind, Bytes bytes, int members) {
  if (kind == OpKind::send) return sim::nccl::predict_send_recv(bytes, nvlink4_node(), true).seconds;
  return sim::nccl::predict(kind, bytes, nvlink4_node(), {members, 1}).seconds;
}

Truth gpu_truth() {
  Truth t = make_truth_for("h100-sxm", compute_workloads(false, DType::bf16, 1, WorkloadScale::gpu), 4e-6, 5e3);
  t.comm_seconds = nccl_seconds;
  return t;
}

DeviceShape gpu(int devices) { return {"simulated-gpu", WorkloadScale::gpu, devices, 1}; }

CalibrationOptions bf16() {
  CalibrationOptions o;
  o.precision = DType::bf16;
  return o;
}

TEST(GpuCalibrate, RecoversKnownCurvesAndLaunchOverheadWithinTwoPercent) {
  const Truth truth = gpu_truth();
  SimulatedDevice device(truth, 0.0, gpu(4));
  const CalibrationResult r = calibrate(device, find_device_profile("h100-sxm"), bf16());
  EXPECT_NEAR(r.profile.launch_overhead_s / truth.profile.launch_overhead_s, 1.0, 0.02);
  expect_curves_recovered(truth, r, 0.02);
}

TEST(GpuCalibrate, CollectiveFitsTimeTheLargestMessagesWithinNcclsProtocolSpread) {
  SimulatedDevice device(gpu_truth(), 0.0, gpu(4));
  const CalibrationResult r = calibrate(device, find_device_profile("h100-sxm"), bf16());
  const Bytes largest = comm_sizes_bytes(false, WorkloadScale::gpu).back();
  int fits = 0;
  for (const CommFit& c : r.comm) {
    // One alpha-beta line across NCCL's protocol switches (LL below ~1 MB, LL128, Simple) and its
    // measured mid-size slowdown (1.2-1.5x from 2 to 64 MiB on 8 ranks) is a compromise: over
    // 64 KiB-256 MiB it times 256 MiB 15-22% slow (measured here). These fits are reported; the
    // simulator runs collectives as flows over the fitted send/recv link.
    const Seconds fitted = c.fit.latency_s + largest / c.fit.bandwidth_bytes_per_s;
    EXPECT_NEAR(fitted / nccl_seconds(c.kind, largest, c.group_size), 1.0, 0.25)
        << to_string(c.kind) << " n=" << c.group_size;
    ++fits;
  }
  EXPECT_EQ(fits, 1 + 4 * 3);  // send/recv, and four collectives over 2, 3 and 4 GPUs
  // The device-to-device link is the send/recv fit: NVLink 4 at NCCL's 18 x 20.6 GB/s.
  EXPECT_NEAR(r.intra_link.bandwidth_bytes_per_s / (18 * 20.6e9), 1.0, 0.02);
}

TEST(GpuCalibrate, OneGpuFitsItsProfileAndNoLink) {
  SimulatedDevice device(gpu_truth(), 0.0, gpu(1));
  const CalibrationResult r = calibrate(device, find_device_profile("h100-sxm"), bf16());
  EXPECT_FALSE(r.profile.efficiency_curves.empty());
  EXPECT_TRUE(r.comm.empty());
  EXPECT_EQ(r.intra_link.bandwidth_bytes_per_s, 0.0);
}

}  // namespace
}  // namespace tandem::calibration
