// A reliability scenario: an ordinary scenario (what to train, on what, how) plus a
// `reliability:` section saying how the job fails, checkpoints and recovers, for `tandem goodput`:
//
//   reliability:
//     failures: llama3-405b-h100      # a failure profile (platforms/failures/) or a path to one
//     failure_rate_scale: 1           # multiplies every rate of the profile (what-if)
//     leaf_switch_mtbf_hours: 0       # > 0: leaf switches fail too, each taking its nodes
//     repair_hours: 48                # a failed node is out this long (required)
//     policy: restart_on_spares       # | wait_for_repair | shrink
//     replan: layout                  # shrink: | search (the best plan for the surviving nodes)
//     spare_nodes: 8                  # restart_on_spares
//     checkpoint:
//       mode: sync                    # | async (training stops only for the snapshot)
//       interval: auto                # | a duration (30min): auto = the best of the sweep
//       host_copy_gb_per_s: 64        # async: device -> host memory rate of the snapshot
//     storage:
//       aggregate_gb_per_s: 2000      # the file system's sustained throughput (required)
//       per_node_gb_per_s: 50         # one node's path to it (default: the node's NICs)
//       latency_s: 0                  # open/commit of one checkpoint
//       background_load: 0            # fraction of the aggregate other jobs use, [0, 1)
//     restart:
//       relaunch_s: 300               # scheduler, process start (required)
//       init_s: 120                   # communicators, model build (required)
//       warmup_iterations: 2          # slower iterations after a restart, counted as lost
//     target_tokens: 1e12             # time to train this many tokens (optional)
//     horizon: 7d                     # default of --horizon
//     trials: 100                     # Monte Carlo trials
//     rebalance_after: 10min          # transient stragglers (stragglers[i].episodes): re-split the
//                                     # batch shares and pipeline layers by speed this long after an
//                                     # episode starts, and back as long after it ends (default: never)
//
// Every error names file, line and field (exit 2).
#pragma once

#include <map>
#include <optional>
#include <string>

#include "platforms/failure_profile.hpp"
#include "scenarios/scenario.hpp"
#include "sim/reliability/checkpoint_cost.hpp"
#include "sim/reliability/goodput_model.hpp"

namespace tandem {

struct ReliabilitySpec {
  FailureProfile failures;
  double failure_rate_scale = 1;
  Seconds leaf_switch_mtbf_s = 0;
  Seconds repair_s = 0;
  sim::reliability::RecoveryPolicy policy = sim::reliability::RecoveryPolicy::restart_on_spares;
  bool replan_search = false;  // shrink: the search re-plans the survivors (scenarios/shrink_replan.hpp)
  int spare_nodes = 0;
  bool async_checkpoint = false;
  Seconds checkpoint_interval_s = 0;  // 0: auto (swept)
  BytesPerSecond host_copy_bytes_per_s = 0;
  sim::reliability::StorageSystem storage;  // per_node 0: the node's NICs
  Seconds relaunch_s = 0;
  Seconds init_s = 0;
  int warmup_iterations = 0;
  double target_tokens = 0;  // 0: none
  Seconds horizon_s = 7 * 86400.0;
  int trials = 100;
  Seconds rebalance_after_s = 0;  // 0: transient stragglers' episodes are never re-balanced
};

struct ReliabilityScenario {
  Scenario base;
  ReliabilitySpec spec;
};

ReliabilityScenario load_reliability_scenario(const std::string& name_or_path);

// A duration field ("30min", "12h", "7d", or seconds) within `range`; the node's error otherwise.
Seconds duration_of(const YamlNode& node, const limits::Range& range);
// The `reliability:` section of a loaded scenario's file, if it has one (a search scenario may).
std::optional<ReliabilitySpec> load_reliability_section(const Scenario& base);

}  // namespace tandem
