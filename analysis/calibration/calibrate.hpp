// Calibration: measure a backend's kernels and communication (microbenchmarks.hpp, workloads.hpp)
// and fit what the simulator needs to predict it:
//
//   * per kernel class (platforms/kernel_class.hpp), an efficiency curve (platforms/efficiency_curve.hpp) on the kind's bound
//     side: both sides are fitted and the one that explains the measurements better is kept
//     (within 10% of each other, the kind's usual side: FLOPs for GEMM and attention, bytes for
//     the others);
//   * the per-op launch overhead: the part of a step spent outside kernels, per op;
//   * the intra-node link's latency and bandwidth (alpha-beta) from send/recv over message sizes,
//     the latency including the backend's hand-off per transfer (a send/recv step's time outside
//     its transfers: waking the stream worker, waking the host), and, for the report, an
//     alpha-beta fit of every measured collective and group size.
//
// fit_calibration() is the pure fitting half (tests feed it synthetic measurements);
// calibrate() runs the workloads on a backend and fits.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "analysis/calibration/fit.hpp"
#include "analysis/calibration/microbenchmarks.hpp"
#include "platforms/cluster.hpp"
#include "platforms/device.hpp"

namespace tandem::calibration {

struct CalibrationOptions {
  bool quick = false;        // the small grid (a few seconds on a CPU)
  int warmup = 1;            // steps per workload before measuring
  int iterations = 5;        // measured steps per workload (medians)
  int max_group_size = 0;    // communication groups 2..this (0: the backend's max_devices)
  DType precision = DType::fp32;
  std::function<void(const std::string&)> progress;  // one line per workload (optional)
};

struct KindFit {
  std::string kernel_class;  // platforms/kernel_class.hpp
  CurveFit fit;
};

struct CommFit {
  OpKind kind = OpKind::send;
  int group_size = 2;
  LinkFit fit;
};

// A compute workload's step run by one replica alone, beside the same step with one replica per
// core (Measurements::compute[busy]): what neighbours cost a kernel.
struct AloneStep {
  std::size_t busy = 0;
  StepMeasurement alone;
};

struct Measurements {
  std::vector<StepMeasurement> compute;  // single-device training steps
  // CPU backends with several cores: the replicated compute workloads again, one replica alone;
  // their kernels' total time over the same kernels' in `compute` is the profile's
  // alone_kernel_time_fraction.
  std::vector<AloneStep> alone;
  std::vector<StepMeasurement> comm;     // communication steps
  CoreSwitchCosts core_switches;         // taken as measured into the profile
};

struct CalibrationResult {
  DeviceProfile profile;  // the base profile with the fitted curves and launch overhead
  LinkSpec intra_link;    // the fitted device-to-device link (send/recv), hand-off included
  Seconds handoff_s = 0;  // per transfer, outside the transfer itself (in intra_link's latency)
  std::vector<KindFit> compute;
  std::vector<CommFit> comm;
  Measurements measurements;
};

// Fits `measurements` on top of `base` (its peaks are the curves' reference). Kinds without
// measurements keep the base's efficiencies. Throws std::invalid_argument when there is nothing
// to fit a link from (no send/recv measurement), except for a single device's compute-only
// measurements (one GPU), whose intra_link stays zero.
CalibrationResult fit_calibration(const Measurements& measurements, const DeviceProfile& base,
                                  DType precision = DType::fp32);

// The fitted collectives (every kind and group size but send/recv) as a shared-memory node's
// measured costs (NodeGroup::collective_costs); fits without a positive bandwidth are left out.
std::vector<CollectiveCost> collective_costs(const CalibrationResult& result);

// Runs the grids on `bench` and fits. The profile's provenance is left for the caller to fill
// (provenance.hpp), so that this stays deterministic given the measurements.
CalibrationResult calibrate(Microbenchmarks& bench, const DeviceProfile& base,
                            const CalibrationOptions& options);

// Every timed op of `m` as CSV (header first): the grid's raw measurements, so that a fit can be
// examined or redone away from the machine (a leased GPU's minutes are few).
// Columns: set (compute, alone, comm), step (its index in that set), label, kind, kernel_class,
// flops, bytes, group_size, seconds.
std::string measurements_csv(const Measurements& m);

// One line per fit: kind, bound side, max efficiency, half work, rms error; then the links.
std::string describe(const CalibrationResult& result);

}  // namespace tandem::calibration
