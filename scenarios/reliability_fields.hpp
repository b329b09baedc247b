// The fields of a scenario's `reliability:` section (scenarios/reliability_spec.hpp): what
// load_reliability_scenario accepts (it checks keys against these tables) and what `tandem fields
// reliability` prints. Defaults are ReliabilitySpec's.
#pragma once

#include "common/field_doc.hpp"

namespace tandem::reliability_fields {

// Bounds past which a value is a typo rather than a fleet.
inline constexpr limits::Range kRateScale{0, 1e4, "x"};
inline constexpr limits::Range kHours{1e-3, 1e6, "h"};
inline constexpr limits::Range kGbPerS{1e-3, 1e6, "GB/s"};
inline constexpr limits::Range kLatencyS{0, 3600, "s"};
inline constexpr limits::Range kLoad{0, 0.99, "of the aggregate"};
inline constexpr limits::Range kSetupS{0, 86400, "s"};
inline constexpr limits::Range kTokens{1, 1e18, "tokens"};
// Durations: a checkpoint every second at most, a horizon of a minute to a century (the Monte
// Carlo's work grows with the horizon: past a century it is a typo that would run for hours).
inline constexpr limits::Range kIntervalS{1, 365.25 * 86400, "s"};
inline constexpr limits::Range kHorizonS{60, 100 * 365.25 * 86400, "s"};
inline constexpr limits::CountRange kSpareNodes{0, 1 << 20};
inline constexpr limits::CountRange kWarmup{0, 100000};
inline constexpr limits::CountRange kTrials{1, 100000};

inline constexpr FieldDoc kRoot[] = {
    {"failures", "failure profile name or path", "required", "causes and rates (platforms/failures/)"},
    {"failure_rate_scale", "x", "1", "multiplies every rate of the profile (what-if)", &kRateScale},
    {"leaf_switch_mtbf_hours", "h", "0 (no switch failures)", "leaf switches fail too, each taking its nodes",
     &kHours},
    {"repair_hours", "h", "required", "how long a failed node is out", &kHours},
    {"policy", "restart_on_spares | wait_for_repair | shrink", "restart_on_spares", "what the job does after a failure"},
    {"replan", "layout | search", "layout",
     "shrink: the survivors keep the replica layout (fewer replicas), or the search picks the best plan for the "
     "surviving nodes (the scenario's search: section, else the default space)"},
    {"spare_nodes", "count", "0", "nodes held for restart_on_spares", nullptr, &kSpareNodes},
    {"checkpoint", "section", "required", "how and how often the job checkpoints"},
    {"storage", "section", "required", "where checkpoints are written"},
    {"restart", "section", "required", "what a restart costs"},
    {"target_tokens", "tokens", "- (none)", "report the time to train this many tokens", &kTokens},
    {"horizon", "duration (7d, 36h)", "7d", "the period simulated, 1 min to 100 years (default of --horizon)"},
    {"trials", "count", "100", "Monte Carlo trials", nullptr, &kTrials},
    {"rebalance_after", "duration (10min)", "- (never)",
     "a transient straggler's episode is detected and the batch shares (and pipeline layers) re-split this long "
     "after it starts, and re-split back as long after it ends"},
};

inline constexpr FieldDoc kCheckpoint[] = {
    {"mode", "sync | async", "sync", "async: training stops only for the device-to-host copy"},
    {"interval", "duration | auto", "auto", "1 s to 1 year; auto: the best of the sweep (Young/Daly and around it)"},
    {"host_copy_gb_per_s", "GB/s", "required with async", "device-to-host rate of the snapshot", &kGbPerS},
};

inline constexpr FieldDoc kStorage[] = {
    {"aggregate_gb_per_s", "GB/s", "required", "the file system's sustained throughput", &kGbPerS},
    {"per_node_gb_per_s", "GB/s", "the node's NICs", "one node's path to it", &kGbPerS},
    {"latency_s", "s", "0", "open and commit of one checkpoint", &kLatencyS},
    {"background_load", "fraction", "0", "share of the aggregate other jobs use", &kLoad},
};

inline constexpr FieldDoc kRestart[] = {
    {"relaunch_s", "s", "required", "scheduler and process start", &kSetupS},
    {"init_s", "s", "required", "communicators and model build", &kSetupS},
    {"warmup_iterations", "count", "0", "slower iterations after a restart, counted as lost", nullptr, &kWarmup},
};

inline constexpr FieldSection kSections[] = {
    {"reliability", kRoot},
    {"reliability.checkpoint", kCheckpoint},
    {"reliability.storage", kStorage},
    {"reliability.restart", kRestart},
};

}  // namespace tandem::reliability_fields
