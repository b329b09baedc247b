#include "scenarios/reliability_spec.hpp"

#include "common/duration_text.hpp"
#include "common/yaml_reader.hpp"
#include "scenarios/reliability_fields.hpp"

namespace tandem {

Seconds duration_of(const YamlNode& node, const limits::Range& range) {
  try {
    return parse_duration_s(node.as_string(), range.min, range.max);
  } catch (const std::invalid_argument& e) {
    node.fail(e.what());
  }
}

namespace {
using sim::reliability::RecoveryPolicy;

using namespace reliability_fields;  // the ranges
constexpr double kSecondsPerHour = 3600;

void read_checkpoint(const YamlNode& node, ReliabilitySpec& r) {
  node.only_keys(kCheckpoint);
  const std::string mode = node.str_or("mode", "sync");
  if (mode != "sync" && mode != "async") node["mode"].fail("expected sync or async");
  r.async_checkpoint = mode == "async";
  if (auto interval = node.get("interval"); interval && interval->as_string() != "auto")
    r.checkpoint_interval_s = duration_of(*interval, kIntervalS);
  if (r.async_checkpoint) r.host_copy_bytes_per_s = node["host_copy_gb_per_s"].in(kGbPerS) * kGB;
  else if (node.has("host_copy_gb_per_s")) node["host_copy_gb_per_s"].fail("only async checkpoints copy to host memory");
}

void read_storage(const YamlNode& node, ReliabilitySpec& r) {
  node.only_keys(kStorage);
  r.storage.aggregate_bytes_per_s = node["aggregate_gb_per_s"].in(kGbPerS) * kGB;
  if (auto n = node.get("per_node_gb_per_s")) r.storage.per_node_bytes_per_s = n->in(kGbPerS) * kGB;
  if (auto n = node.get("latency_s")) r.storage.latency_s = n->in(kLatencyS);
  if (auto n = node.get("background_load")) r.storage.background_load = n->in(kLoad);
}

void read_restart(const YamlNode& node, ReliabilitySpec& r) {
  node.only_keys(kRestart);
  r.relaunch_s = node["relaunch_s"].in(kSetupS);
  r.init_s = node["init_s"].in(kSetupS);
  if (auto n = node.get("warmup_iterations")) r.warmup_iterations = static_cast<int>(n->count(kWarmup));
}

ReliabilitySpec read_reliability(const YamlNode& node, const Scenario& base) {
  node.only_keys(kRoot);
  ReliabilitySpec r;
  const YamlNode failures = node["failures"];
  try {
    r.failures = find_failure_profile(failures.as_string());
  } catch (const InputError& e) {
    if (e.line() > 0) throw;  // inside the profile: it names its own line
    failures.fail(e.what());
  }
  if (auto n = node.get("failure_rate_scale")) r.failure_rate_scale = n->in(kRateScale);
  if (auto n = node.get("leaf_switch_mtbf_hours")) r.leaf_switch_mtbf_s = n->in(kHours) * kSecondsPerHour;
  r.repair_s = node["repair_hours"].in(kHours) * kSecondsPerHour;
  if (auto n = node.get("policy")) {
    try {
      r.policy = sim::reliability::parse_recovery_policy(n->as_string());
    } catch (const std::invalid_argument& e) {
      n->fail(e.what());
    }
  }
  if (auto n = node.get("replan")) {
    const std::string how = n->as_string();
    if (how != "layout" && how != "search") n->fail("'" + how + "' (expected layout or search)");
    if (r.policy != RecoveryPolicy::shrink) n->fail("re-planning serves the shrink policy only");
    r.replan_search = how == "search";
  }
  if (r.policy == RecoveryPolicy::shrink && !r.replan_search && base.parallel.data_parallel_size < 2)
    node["policy"].fail("shrink continues on the surviving data-parallel replicas: the strategy has only one "
                        "(replan: search re-plans the surviving nodes instead)");
  if (auto n = node.get("spare_nodes")) {
    if (r.policy != RecoveryPolicy::restart_on_spares) n->fail("spare nodes serve the restart_on_spares policy only");
    r.spare_nodes = static_cast<int>(n->count(kSpareNodes));
  }
  read_checkpoint(node["checkpoint"], r);
  read_storage(node["storage"], r);
  read_restart(node["restart"], r);
  if (auto n = node.get("target_tokens")) r.target_tokens = n->in(kTokens);
  if (auto n = node.get("horizon")) r.horizon_s = duration_of(*n, kHorizonS);
  if (auto n = node.get("trials")) r.trials = static_cast<int>(n->count(kTrials));
  if (auto n = node.get("rebalance_after")) {
    if (transient_stragglers(base.stragglers).empty())
      n->fail("re-balancing answers stragglers that come and go: no straggler has episodes");
    r.rebalance_after_s = duration_of(*n, kIntervalS);
  }
  return r;
}

}  // namespace

ReliabilityScenario load_reliability_scenario(const std::string& name_or_path) {
  ReliabilityScenario rs;
  rs.base = load_scenario(name_or_path);
  std::optional<ReliabilitySpec> spec = load_reliability_section(rs.base);
  if (!spec) throw InputError(rs.base.file, 0, "reliability", "the scenario has no reliability section (see scenarios/reliability_spec.hpp)");
  rs.spec = std::move(*spec);
  // The section's lines, so that what goodput finds later (a shrink no plan survives, a storage
  // simulation that fails) names the line of its field, as the scenario's own fields do.
  const YamlNode section = YamlNode::load_file(rs.base.file)["reliability"];
  rs.base.lines["reliability"] = section.line();
  for (const auto& [key, node] : section.entries()) {
    rs.base.lines["reliability." + key] = node.line();
    if (node.is_map())
      for (const auto& [inner, value] : node.entries()) rs.base.lines["reliability." + key + "." + inner] = value.line();
  }
  return rs;
}

std::optional<ReliabilitySpec> load_reliability_section(const Scenario& base) {
  const YamlNode root = YamlNode::load_file(base.file);
  const auto section = root.get("reliability");
  if (!section) return std::nullopt;
  return read_reliability(*section, base);
}

}  // namespace tandem
