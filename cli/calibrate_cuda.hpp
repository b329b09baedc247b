// `tandem calibrate --backend cuda` (CUDA builds only): calibration's GPU-scale grids measured on
// this machine's GPUs (exec/cuda/calibration/cuda_microbenchmarks.hpp), fitted with the CPU
// calibration's curve form (analysis/calibration/calibrate.hpp), written as a device profile
// and, with two GPUs or more, a single-node cluster whose NVSwitch link is the fitted send/recv.
#pragma once

#include "cli/calibrate_command.hpp"

namespace tandem::cli {

int run_calibrate_cuda(const CalibrateOptions& options);

}  // namespace tandem::cli
