#include "cli/goodput_command.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <limits>
#include <optional>

#include "cli/option_ranges.hpp"
#include "common/duration_text.hpp"
#include "common/input_error.hpp"
#include "common/output_set.hpp"
#include "scenarios/goodput_inputs.hpp"
#include "scenarios/reliability_fields.hpp"
#include "scenarios/reliability_spec.hpp"
#include "scenarios/shrink_replan.hpp"
#include "sim/reliability/checkpoint_interval.hpp"
#include "sim/reliability/goodput_estimate.hpp"

namespace tandem::cli {

namespace rel = sim::reliability;

namespace {

constexpr limits::CountRange kTrials{1, 100000};
constexpr limits::CountRange kSweepPoints{3, 201};
// The sweep spans Young's interval divided and multiplied by this: wide enough for Daly's
// correction and for restarts that move the optimum, narrow enough to resolve it.
constexpr double kSweepSpan = 4;
// Shrink: the survivors' iteration is simulated for this many smallest losses (1..4 replicas
// down); wider losses scale linearly from there (one simulation each, seconds apiece).
constexpr int kShrinkSimulated = 4;
// A timeline's steps in --json at most (each a state or throughput change: failures, restarts,
// shrinks, slowdown episodes; a week of a flaky job has hundreds).
constexpr std::size_t kTimelinePoints = 20000;
// Simulated years (trials x horizon) one run may play: see run_goodput.
constexpr double kMaxTrialYears = 10000;
// Slowdown episodes are events too, played by every trial of every pass (the sweep's intervals,
// the horizon, the time to train): 1,000,000 episodes of 100 trials over 7 days took 4.7 s on the
// 2-core VM (episodes every minute); past 2,000,000 a run would take minutes or hours.
constexpr double kMaxEpisodes = 2e6;

std::string percent(double fraction) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f%%", 100 * fraction);
  return text;
}

std::string number(double value, const char* format = "%.4g") {
  char text[64];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

struct Report {
  GoodputSetup setup;
  rel::IntervalSweep sweep;
  bool swept = false;
  rel::HorizonEstimate horizon;
  std::optional<rel::TimeToTrain> train;
  std::vector<rel::Straggler> stragglers;
  double tokens_per_s_failure_free = 0;
  std::optional<ReplannedShrink> replanned;  // shrink re-planned by the search
  std::optional<SimulatedStorage> storage;   // the checkpoint's traffic simulated (multi-node jobs)
  std::vector<rel::TimelinePoint> timeline;  // one trial's
};

nlohmann::json estimate_json(const rel::Estimate& e) {
  return {{"mean", e.mean}, {"ci95_low", e.low}, {"ci95_high", e.high}, {"stddev", e.stddev}, {"samples", e.samples}};
}

nlohmann::json to_json(const ReliabilityScenario& rs, const GoodputOptions& o, const Report& r) {
  const rel::GoodputModel& m = r.setup.model;
  nlohmann::json j;
  j["scenario"] = rs.base.name;
  j["seed"] = o.seed;
  j["devices"] = r.setup.job.devices;
  j["nodes"] = r.setup.job.nodes;
  j["iteration_s"] = m.iteration_s;
  j["tokens_per_iteration"] = m.tokens_per_iteration;
  j["failure_free_tokens_per_s"] = r.tokens_per_s_failure_free;
  for (const rel::Straggler& s : r.stragglers)
    j["stragglers"].push_back({{"rank", s.rank}, {"compute_slowdown", s.compute_slowdown},
                               {"network_bandwidth_fraction", s.network_bandwidth_fraction}});
  j["failure_profile"] = {{"name", rs.spec.failures.name}, {"source", rs.spec.failures.source}};
  j["job_mtbf_s"] = 1 / m.total_failure_rate_per_s();
  for (const rel::FailureStream& f : m.failures)
    j["causes"].push_back({{"cause", f.cause}, {"rate_per_hour", f.rate_per_s * 3600}, {"nodes_taken", f.nodes_taken}});
  j["checkpoint"] = {{"bytes", r.setup.checkpoint_bytes}, {"mode", m.checkpoint.asynchronous ? "async" : "sync"},
                     {"blocking_s", m.checkpoint.blocking_s}, {"write_s", r.setup.write_s},
                     {"storage_simulated", r.setup.storage_simulated}, {"contention_s", r.setup.contention_s},
                     {"background_write_s", m.checkpoint.write_s},
                     {"iteration_beside_write_s", r.storage ? r.storage->iteration_beside_s : 0.0},
                     {"interval_s", m.interval_s}};
  j["restart_s"] = m.restart_s;
  j["policy"] = rel::to_string(m.policy);
  if (!m.shrunk_throughput.empty()) j["shrunk_throughput"] = m.shrunk_throughput;
  j["shrink_unit"] = r.replanned ? "nodes" : "replicas";
  for (const rel::TimelinePoint& p : r.timeline)
    j["timeline"].push_back({{"t_s", p.t_s}, {"state", p.state}, {"throughput", p.throughput}, {"failures", p.failures}});
  if (r.replanned) {
    j["replanned_plans"] = r.replanned->plans;
    j["replanned_full_width_speedup"] = r.replanned->full_width_speedup;
  }
  for (const rel::Slowdown& s : m.slowdowns)
    j["slowdowns"].push_back({{"straggler", s.what}, {"every_s", 1 / s.episodes_per_s}, {"lasting_s", s.mean_s},
                              {"throughput", s.throughput}, {"rebalanced_throughput", s.rebalanced},
                              {"throughput_after", s.after}, {"resplit_s", s.resplit_s}});
  if (m.rebalance_after_s > 0) j["rebalance_after_s"] = m.rebalance_after_s;
  if (r.swept) {
    j["sweep"] = {{"best_interval_s", r.sweep.best_interval_s}, {"young_s", r.sweep.young_s}, {"daly_s", r.sweep.daly_s}};
    for (const rel::SweepPoint& p : r.sweep.points)
      j["sweep"]["points"].push_back({{"interval_s", p.interval_s}, {"goodput", p.goodput}});
  }
  const rel::HorizonEstimate& h = r.horizon;
  j["horizon_s"] = h.horizon_s;
  j["trials"] = h.trials;
  j["goodput"] = estimate_json(h.goodput);
  j["effective_tokens_per_s"] = estimate_json(h.tokens_per_s);
  j["failures_per_trial"] = estimate_json(h.failures);
  j["time_s"] = {{"useful", h.useful_s}, {"checkpoint", h.checkpoint_s}, {"degraded", h.degraded_s},
                 {"slowed", h.slowed_s}, {"regrow", h.regrow_s}};
  for (std::size_t c = 0; c < h.causes.size(); ++c)
    j["time_s"]["by_cause"][h.causes[c]] = {{"lost_work", h.lost_s[c]}, {"restart", h.restart_s[c]}, {"waiting", h.waiting_s[c]}};
  if (r.train) {
    j["time_to_train"] = {{"tokens", r.train->tokens}, {"failure_free_s", r.train->failure_free_s},
                          {"wall_s", estimate_json(r.train->wall_s)}, {"p10_s", r.train->p10_s},
                          {"p90_s", r.train->p90_s}, {"unfinished_trials", r.train->unfinished}};
  }
  return j;
}

std::string to_text(const ReliabilityScenario& rs, const Report& r) {
  const rel::GoodputModel& m = r.setup.model;
  const rel::HorizonEstimate& h = r.horizon;
  std::string t;
  auto line = [&](const std::string& label, const std::string& text) {
    t += label + std::string(label.size() < 12 ? 12 - label.size() : 1, ' ') + text + "\n";
  };
  line("scenario", rs.base.name + " on " + std::to_string(r.setup.job.devices) + " devices, " +
                       std::to_string(r.setup.job.nodes) + " nodes");
  line("iteration", format_duration(m.iteration_s) + " simulated once (failure-free: " +
                        number(r.tokens_per_s_failure_free, "%.4g") + " tokens/s)");
  for (const rel::Straggler& s : r.stragglers) line("straggler", rel::describe(s) + " (in the simulated iteration)");
  for (const rel::Slowdown& s : m.slowdowns)
    line("episodes", s.what + " every " + format_duration(1 / s.episodes_per_s) + " for " + format_duration(s.mean_s) +
                         " on average: " + percent(s.throughput) + " of the throughput while it lasts (simulated)" +
                         (m.rebalance_after_s > 0 ? "; re-split by speed after " + format_duration(m.rebalance_after_s) + ": " +
                                                        percent(s.rebalanced) + ", " + percent(s.after) +
                                                        " once healed until split back" +
                                                        (s.resplit_s > 0 ? " (each re-split moves layers: " +
                                                                               format_duration(s.resplit_s) + ", charged)"
                                                                         : "")
                                                  : ""));
  line("failures", "job MTBF " + format_duration(1 / m.total_failure_rate_per_s()) + " from " + rs.spec.failures.name +
                       " (" + rs.spec.failures.source + ")");
  for (const rel::FailureStream& f : m.failures)
    line("", "  " + f.cause + ": every " + format_duration(1 / f.rate_per_s) + ", takes " + std::to_string(f.nodes_taken) +
                 " node(s)");
  line("checkpoint", number(r.setup.checkpoint_bytes / 1e9, "%.1f") + " GB, written in " + format_duration(r.setup.write_s) +
                         (m.checkpoint.asynchronous ? " alone; in the background in " + format_duration(m.checkpoint.write_s) +
                                                          " after a " + format_duration(r.setup.snapshot_s) + " snapshot"
                                                    : " (training stops)") +
                         ", every " + format_duration(m.effective_interval_s()) + " of training");
  if (r.setup.storage_simulated)
    line("", "(storage simulated: every rank's shard through its NIC and the network into the storage's link" +
                 std::string(m.checkpoint.asynchronous && r.storage
                                 ? "; beside the write an iteration takes " + format_duration(r.storage->iteration_beside_s) +
                                       ", costing " + format_duration(r.setup.contention_s) + " of training per checkpoint)"
                                 : ")"));
  if (r.swept) {
    line("interval", "best of the sweep " + format_duration(r.sweep.best_interval_s) + "; Young " +
                         format_duration(r.sweep.young_s) + ", Daly " + format_duration(r.sweep.daly_s) +
                         " (their assumptions: Poisson failures, fixed costs, restart in place)");
  }
  line("restart", format_duration(m.restart_s) + " (relaunch " + format_duration(rs.spec.relaunch_s) + ", init " +
                      format_duration(rs.spec.init_s) + ", reload " + format_duration(r.setup.reload_s) + ", " +
                      std::to_string(rs.spec.warmup_iterations) + " warm-up iterations); policy " + rel::to_string(m.policy));
  if (r.replanned) {
    // The plan the search found for each of the largest few survivor counts, and its throughput.
    for (int n = m.replicas - 1; n >= std::max(1, m.replicas - kShrinkSimulated); --n) {
      const std::string& plan = r.replanned->plans[static_cast<std::size_t>(n)];
      line(n == m.replicas - 1 ? "shrink" : "",
           std::to_string(n) + "/" + std::to_string(m.replicas) + " nodes " +
               percent(m.shrunk_throughput[static_cast<std::size_t>(n)]) +
               (plan.empty() ? " (no plan fits: no progress)" : " re-planned: " + plan));
    }
    line("", "(searched and simulated; the global batch kept; the restart reads the checkpoint into the new layout)");
    if (r.replanned->full_width_speedup > 1.02)
      line("", "note: on all " + std::to_string(m.replicas) + " nodes the search finds " +
                   r.replanned->plans[static_cast<std::size_t>(m.replicas)] + ", " +
                   number(r.replanned->full_width_speedup, "%.2f") + "x the scenario's plan: `tandem search` it");
  } else if (!m.shrunk_throughput.empty()) {
    // The survivors' simulated throughput (the largest few widths), against linear scaling.
    std::string widths;
    for (int a = m.replicas - 1; a >= std::max(1, m.replicas - kShrinkSimulated); --a)
      widths += (widths.empty() ? "" : ", ") + std::to_string(a) + "/" + std::to_string(m.replicas) + " replicas " +
                percent(m.shrunk_throughput[static_cast<std::size_t>(a)]);
    line("shrink", widths + " of full throughput (simulated; the global batch kept)");
  }
  line("horizon", format_duration(h.horizon_s) + ", " + std::to_string(h.trials) + " trials, " +
                      number(h.failures.mean, "%.1f") + " failures per trial");
  line("goodput", percent(h.goodput.mean) + " [" + percent(h.goodput.low) + ", " + percent(h.goodput.high) + "] (95% CI)");
  line("tokens/s", number(h.tokens_per_s.mean) + " effective [" + number(h.tokens_per_s.low) + ", " +
                       number(h.tokens_per_s.high) + "]");
  line("time", "useful " + percent(h.useful_s / h.horizon_s) + ", checkpoints " + percent(h.checkpoint_s / h.horizon_s) +
                   (h.degraded_s > 0 ? ", shrunk " + percent(h.degraded_s / h.horizon_s) : "") +
                   (h.slowed_s > 0 ? ", slowed " + percent(h.slowed_s / h.horizon_s) : "") +
                   (h.regrow_s > 0 ? ", regrowing " + percent(h.regrow_s / h.horizon_s) : ""));
  for (std::size_t c = 0; c < h.causes.size(); ++c)
    line("", "  " + h.causes[c] + ": lost work " + percent(h.lost_s[c] / h.horizon_s) + ", restarts " +
                 percent(h.restart_s[c] / h.horizon_s) + ", waiting " + percent(h.waiting_s[c] / h.horizon_s));
  if (r.train) {
    const rel::TimeToTrain& tt = *r.train;
    line("to train", number(tt.tokens, "%.3g") + " tokens: " + format_duration(tt.wall_s.mean) + " [" +
                         format_duration(tt.wall_s.low) + ", " + format_duration(tt.wall_s.high) + "] (95% CI of the mean; p10 " +
                         format_duration(tt.p10_s) + ", p90 " + format_duration(tt.p90_s) + "); failure-free " +
                         format_duration(tt.failure_free_s) +
                         (tt.unfinished > 0 ? "; " + std::to_string(tt.unfinished) + " trials never finished" : ""));
  }
  return t;
}

}  // namespace

CLI::App* add_goodput_command(CLI::App& app, GoodputOptions& o) {
  CLI::App* cmd = app.add_subcommand("goodput", "goodput over days: failures, checkpoints, restarts, stragglers");
  cmd->add_option("scenario", o.scenario, "scenario with a reliability section (file or bundled name)")->required();
  cmd->add_option("--horizon", o.horizon, "how long to play (7d, 12h, 30min, 90s); default: the scenario's");
  cmd->add_option("--seed", o.seed, "seed of the Monte Carlo and of drawn stragglers");
  cmd->add_option("--trials", o.trials, "Monte Carlo trials")->check(in_range(kTrials));
  cmd->add_option("--tokens", o.tokens, "time to train this many tokens (overrides reliability.target_tokens)");
  cmd->add_option("--interval", o.interval, "checkpoint interval (a duration, or auto: the sweep's best)");
  cmd->add_option("--sweep-points", o.sweep_points, "intervals in the sweep")->check(in_range(kSweepPoints));
  cmd->add_option("--json", o.json_path, "write the result as JSON to FILE ('-' for stdout)");
  return cmd;
}

int run_goodput(const GoodputOptions& o) {
  // 1. Inputs, all checked before anything runs.
  OutputSet::check_writable(o.json_path, "--json");
  ReliabilityScenario rs = load_reliability_scenario(o.scenario);
  ReliabilitySpec& spec = rs.spec;
  const auto duration = [](const std::string& text, const limits::Range& range, const char* option) {
    try {
      return parse_duration_s(text, range.min, range.max);
    } catch (const std::invalid_argument& e) {
      throw InputError("command line", 0, option, e.what());
    }
  };
  if (!o.horizon.empty()) spec.horizon_s = duration(o.horizon, reliability_fields::kHorizonS, "--horizon");
  if (!o.interval.empty())
    spec.checkpoint_interval_s = o.interval == "auto" ? 0 : duration(o.interval, reliability_fields::kIntervalS, "--interval");
  if (o.tokens) {
    if (!(*o.tokens >= 1 && *o.tokens <= 1e18)) throw InputError("command line", 0, "--tokens", "must be in [1, 1e18]");
    spec.target_tokens = *o.tokens;
  }
  if (o.trials) spec.trials = *o.trials;
  // The Monte Carlo's work grows with trials x horizon: 100 trials of a century took 5 s on the
  // 2-core VM (goodput-gpt2-124m-straggler); beyond that a typo would run for minutes or hours.
  const double trial_years = spec.trials * spec.horizon_s / (365.25 * 86400);
  if (trial_years > kMaxTrialYears)
    throw InputError(o.trials ? "command line" : rs.base.file, 0, o.trials ? "--trials" : "reliability.trials",
                     std::to_string(spec.trials) + " trials of " + format_duration(spec.horizon_s) + " are " +
                         std::to_string(static_cast<long long>(std::ceil(trial_years))) +
                         " simulated years, more than the " + std::to_string(static_cast<int>(kMaxTrialYears)) +
                         " one run plays: lower the trials or the horizon");
  // The episodes they would play, refused at the most frequent straggler's field.
  double episodes = 0;
  const StragglerSpec* most_frequent = nullptr;
  // Kept in a variable: `most_frequent` points into it after the loop (a temporary's range-for
  // ended its life there; ThreadSanitizer's run found the read after free).
  const std::vector<StragglerSpec> transient = transient_stragglers(rs.base.stragglers);
  for (const StragglerSpec& s : transient) {
    episodes += spec.trials * spec.horizon_s / s.episode_every_s;
    if (most_frequent == nullptr || s.episode_every_s < most_frequent->episode_every_s) most_frequent = &s;
  }
  if (episodes > kMaxEpisodes)
    throw InputError(most_frequent->file, most_frequent->line, most_frequent->field + ".episodes.every",
                     "slowdown episodes every " + format_duration(most_frequent->episode_every_s) + " over " +
                         std::to_string(spec.trials) + " trials of " + format_duration(spec.horizon_s) + " are " +
                         number(episodes, "%.3g") + " episodes, more than the " + number(kMaxEpisodes, "%.3g") +
                         " one run plays: space them out, or lower the trials or the horizon");

  // 2. The failure-free iteration, simulated once, with this seed's stragglers.
  auto strategy = make_strategy(rs.base);
  sim::SimulationOptions options = rs.base.simulation;
  options.stragglers = draw_stragglers(permanent_stragglers(rs.base.stragglers), strategy->world_size(), o.seed);
  // Shrink: the survivors' iterations first, in children (before this process starts its engine).
  std::vector<double> shrunk;
  std::optional<ReplannedShrink> replanned;
  if (spec.policy == rel::RecoveryPolicy::shrink && spec.replan_search) {
    replanned = replan_shrink(rs.base, kShrinkSimulated);
    shrunk = replanned->throughput;
  } else if (spec.policy == rel::RecoveryPolicy::shrink && rs.base.parallel.data_parallel_size > 1) {
    shrunk = shrunk_throughput(rs.base, options, kShrinkSimulated);
  }
  // Transient stragglers: an iteration per episode kind, in children too.
  std::vector<rel::Slowdown> slowdowns = transient_slowdowns(rs.base, options, o.seed, spec.rebalance_after_s);
  // The checkpoint's writes through the cluster's network (and beside training, async), in children too.
  const std::optional<SimulatedStorage> storage = simulate_storage(rs, *strategy, options);
  const sim::SimulationResult iteration = sim::simulate(*strategy, rs.base.cluster, options);

  // 3. The horizon, as events.
  Report r;
  r.stragglers = options.stragglers;
  r.setup = goodput_setup(rs, *strategy, iteration, storage ? &*storage : nullptr);
  r.storage = storage;
  rel::GoodputModel& m = r.setup.model;
  m.shrunk_throughput = shrunk;
  if (replanned) {  // the survivors are counted in nodes, each failure taking its nodes
    m.replicas = replanned->nodes;
    m.replicas_per_node = 1;
    r.replanned = replanned;
  }
  m.slowdowns = std::move(slowdowns);
  m.rebalance_after_s = spec.rebalance_after_s;
  r.tokens_per_s_failure_free = m.tokens_per_iteration / m.iteration_s;
  if (m.total_failure_rate_per_s() <= 0) throw InputError(rs.base.file, 0, "reliability.failures", "no failures: goodput is trivially 100%");
  const Seconds mtbf = 1 / m.total_failure_rate_per_s();
  const Seconds young = rel::young_interval_s(m.checkpoint.blocking_s > 0 ? m.checkpoint.blocking_s : m.iteration_s, mtbf);
  const Seconds low = std::max(m.iteration_s, young / kSweepSpan);
  r.sweep = rel::sweep_interval(m, low, std::max(young * kSweepSpan, 4 * low), o.sweep_points, spec.horizon_s,
                                spec.trials, o.seed);
  r.swept = true;
  const Seconds chosen = spec.checkpoint_interval_s > 0 ? spec.checkpoint_interval_s : r.sweep.best_interval_s;
  m.interval_s = std::max(1.0, std::round(chosen / m.iteration_s)) * m.iteration_s;  // whole iterations
  r.horizon = rel::estimate_horizon(m, spec.horizon_s, spec.trials, o.seed);
  if (spec.target_tokens > 0) r.train = rel::estimate_time_to_train(m, spec.target_tokens, spec.trials, o.seed);
  // One trial's timeline (the seed's own stream), for plots: its state and throughput over time.
  rel::run_trial(m, spec.horizon_s, o.seed, std::numeric_limits<double>::infinity(), &r.timeline, kTimelinePoints);

  // 4. Report.
  const nlohmann::json json = to_json(rs, o, r);
  OutputSet outputs;
  if (!o.json_path.empty() && o.json_path != "-") outputs.stage(o.json_path, json.dump(2) + "\n");
  outputs.commit();
  if (o.json_path == "-") std::cout << json.dump(2) << "\n";
  else std::cout << to_text(rs, r);
  return 0;
}

}  // namespace tandem::cli
