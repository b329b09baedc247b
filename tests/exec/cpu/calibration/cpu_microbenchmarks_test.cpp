#include "exec/cpu/calibration/cpu_microbenchmarks.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <set>

#include "analysis/calibration/workloads.hpp"

namespace tandem::exec::cpu {
namespace {

using calibration::OpTiming;
using calibration::StepMeasurement;

// TANDEM_CALIBRATION_VERBOSE=1 prints every op measured (diagnosis on a new machine).
bool verbose() { return std::getenv("TANDEM_CALIBRATION_VERBOSE") != nullptr; }

void print(const StepMeasurement& step) {
  if (!verbose()) return;
  double kernels = 0;
  for (const OpTiming& op : step.ops) {
    kernels += op.seconds;
    std::cout << op.label << " " << to_string(op.kind) << " flops " << op.flops << " bytes " << op.bytes
              << " us " << op.seconds * 1e6 << "\n";
  }
  std::cout << "step " << step.step_s * 1e6 << " us, kernels " << kernels * 1e6 << " us\n";
}

TEST(CpuMicrobenchmarks, PassingACoreBetweenThreadsCostsMicrosecondsNotScheduledTicks) {
  CpuMicrobenchmarks bench(2);
  const calibration::CoreSwitchCosts costs = bench.measure_core_switches();
  // A context switch while every core is busy, a wake-up of an idle core: microseconds (3-6 and
  // 15-24 us on the 2-core development VM); a millisecond would be a scheduler tick, i.e. not a
  // hand-off at all.
  EXPECT_GT(costs.handoff_s, 0.0);
  EXPECT_LT(costs.handoff_s, 1e-3);
  EXPECT_GT(costs.wake_s, 0.0);
  EXPECT_LT(costs.wake_s, 1e-3);
}

TEST(CpuMicrobenchmarks, TimesEveryComputeKindOfATrainingStepOnce) {
  CpuMicrobenchmarks bench(2);
  const auto workloads = calibration::compute_workloads(/*quick=*/true);
  const StepMeasurement step = bench.measure(workloads.front(), 1, 3);
  print(step);
  std::set<OpKind> kinds;
  std::set<std::string> labels;
  double kernels_s = 0;
  for (const OpTiming& op : step.ops) {
    if (is_communication(op.kind)) continue;  // a one-device replica still "reduces" its gradients
    EXPECT_GT(op.seconds, 0) << op.label;
    EXPECT_TRUE(labels.insert(op.label).second) << "twice: " << op.label;
    kinds.insert(op.kind);
    kernels_s += op.seconds;
  }
  for (OpKind k : {OpKind::gemm, OpKind::attention, OpKind::norm, OpKind::elementwise, OpKind::embedding,
                   OpKind::loss, OpKind::optimizer}) {
    EXPECT_TRUE(kinds.count(k)) << to_string(k);
  }
  EXPECT_GT(step.step_s, 0);
  EXPECT_LT(kernels_s, 10 * step.step_s);  // medians of parts may exceed the median whole a little
}

TEST(CpuMicrobenchmarks, TimesEachMessageSizeOfACollective) {
  CpuMicrobenchmarks bench(2);
  const std::vector<Bytes> sizes{4096, 1 << 20};
  const StepMeasurement step = bench.measure(calibration::comm_workload(OpKind::all_reduce, 2, sizes), 1, 3);
  print(step);
  ASSERT_EQ(step.ops.size(), 2u);
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    EXPECT_EQ(step.ops[i].kind, OpKind::all_reduce);
    EXPECT_EQ(step.ops[i].bytes, sizes[i]);
    EXPECT_EQ(step.ops[i].group_size, 2);
    EXPECT_GT(step.ops[i].seconds, 0);
  }
}

TEST(CpuMicrobenchmarks, SendRecvPairsCountAsOneTwoDeviceTransfer) {
  CpuMicrobenchmarks bench(2);
  const StepMeasurement step = bench.measure(calibration::comm_workload(OpKind::send, 2, {65536}), 0, 2);
  print(step);
  ASSERT_FALSE(step.ops.empty());
  for (const OpTiming& op : step.ops) EXPECT_EQ(op.group_size, 2) << op.label;
}

}  // namespace
}  // namespace tandem::exec::cpu
