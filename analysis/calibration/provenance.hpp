// Where a calibration was made: this machine's host name and CPU model, the date, the tandem
// commit. Recorded in every calibrated profile (`calibrated:`), so a profile in platforms/ says
// which machine it describes.
#pragma once

#include <string>

#include "platforms/device.hpp"

namespace tandem::calibration {

// `backend` and `accelerator` as the microbenchmarks report them.
DeviceProfile::Provenance this_machine(const std::string& backend, const std::string& accelerator);

// The "model name" line of /proc/cpuinfo ("unknown" when there is none).
std::string cpu_model_name();

}  // namespace tandem::calibration
