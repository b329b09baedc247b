// What the report shows of a prediction (`tandem simulate --json`) or of a measured run
// (`tandem run --json`): headline numbers, time breakdown bars, memory per device. Read from
// those JSON files (analysis never links the simulator or the executor), validating each field
// it uses: a malformed file is an InputError naming file and field.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/units.hpp"

namespace tandem::report {

struct BreakdownRow {
  std::string label;
  Seconds compute_s = 0;
  Seconds exposed_comm_s = 0;
  Seconds idle_s = 0;
};

struct MemoryRow {
  std::string label;  // a device group (prediction) or a rank (measurement)
  Bytes peak_bytes = 0;
  Bytes capacity_bytes = 0;  // 0 when unknown
  std::map<std::string, Bytes> by_category;  // at the peak
  bool out_of_memory = false;
};

struct RunSummary {
  std::string file;
  std::string scenario, strategy, model;
  int devices = 0;
  Seconds iteration_time_s = 0;
  double tokens_per_s = 0;
  std::optional<double> mfu;
  std::vector<BreakdownRow> breakdown;  // prediction only: mean over ranks, slowest rank
  std::vector<MemoryRow> memory;
  // Prediction only: what it rests on, one line each: every device profile's basis ("H100-SXM:
  // datasheet peaks; ..."), then what times the collectives ("collectives, H100-SXM: NCCL ...").
  std::vector<std::string> rests_on;
};

RunSummary read_prediction_json(const std::string& path);       // tandem simulate --json
RunSummary read_measured_summary_json(const std::string& path);  // tandem run --json

}  // namespace tandem::report
