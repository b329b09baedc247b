// Where a calibration was made: this machine's identity (host name, CPU model, usable cores,
// kernel, and a machine id), the date, the tandem commit. Recorded in every calibrated profile
// (`calibrated:`), so a profile in platforms/ says which machine it describes, and a run can tell
// whether a bundled profile describes the machine it runs on.
#pragma once

#include <string>

#include "platforms/device.hpp"

namespace tandem::calibration {

// `backend` and `accelerator` as the microbenchmarks report them.
DeviceProfile::Provenance this_machine(const std::string& backend, const std::string& accelerator);

// The "model name" line of /proc/cpuinfo ("unknown" when there is none).
std::string cpu_model_name();

// This OS installation in this boot, as a hash of `root`/etc/machine-id and the kernel's boot id
// (`root`/proc/sys/kernel/random/boot_id); "" when there is no machine id. Why both: host name
// and CPU model are the same on every VM of a fleet ("vm", "AMD EPYC"), a fresh root or container
// has no machine id of its own (or a new one), and a VM that reboots may come back on another
// host with other neighbours: a calibration describes one boot of one installation.
std::string machine_id(const std::string& root = "/");

// "" when a profile calibrated on `measured` describes the machine `here`: the same machine id
// (never an empty one), host name, CPU model, cores and kernel. Otherwise what differs, in words.
std::string not_this_machine(const DeviceProfile::Provenance& measured, const DeviceProfile::Provenance& here);

}  // namespace tandem::calibration
