// What the report shows of a goodput estimate (`tandem goodput --json`): the headline (goodput and
// effective throughput with their 95% intervals, failures per trial), where the wall time went
// (useful work, checkpoints, and per failure cause the work lost, the restarts and the waiting),
// one trial's timeline (state and throughput over the horizon), the checkpoint-interval sweep
// against Young's and Daly's intervals, and the time to train. Read from that JSON file, each
// field it uses validated: a malformed file is an InputError naming file, line and field.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/units.hpp"

namespace tandem::report {

struct Interval95 {
  double mean = 0, low = 0, high = 0;
};

struct GoodputStep {  // from t_s on, the job is in `state` at `throughput` (of its full speed)
  Seconds t_s = 0;
  std::string state;
  double throughput = 0;
  int failures = 0;
};

struct CauseTime {  // mean seconds per trial lost to one failure cause
  Seconds lost_work_s = 0, restart_s = 0, waiting_s = 0;
};

struct GoodputSweepPoint {
  Seconds interval_s = 0;
  double goodput = 0;
};

struct GoodputSummary {
  std::string file;
  std::string scenario;
  std::string policy;
  std::string failure_source;  // the failure profile's name and source
  int devices = 0;
  Seconds horizon_s = 0;
  int trials = 0;
  Interval95 goodput, tokens_per_s, failures;
  double failure_free_tokens_per_s = 0;
  std::optional<Seconds> iteration_s;  // the failure-free iteration simulated
  Seconds checkpoint_interval_s = 0;
  // Mean seconds per trial: useful work, checkpoints, degraded (shrunk), slowed (stragglers),
  // regrow (restarting at full width), and per failure cause.
  std::map<std::string, Seconds> time_s;
  std::map<std::string, CauseTime> by_cause;
  std::vector<GoodputStep> timeline;  // one trial's (the seed's), ordered by time
  std::optional<Seconds> best_interval_s, young_s, daly_s;
  std::vector<GoodputSweepPoint> sweep;
  std::optional<double> train_tokens;
  std::optional<Interval95> train_wall_s;
  std::optional<Seconds> train_failure_free_s;
  std::string document;  // the file's JSON as read (embedded in the page as the plots' data)
};

GoodputSummary read_goodput_json(const std::string& path);  // tandem goodput --json

}  // namespace tandem::report
