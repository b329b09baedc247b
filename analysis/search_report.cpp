#include "analysis/search_report.hpp"

#include <cstdio>
#include <algorithm>
#include <optional>
#include <set>
#include <sstream>

#include "common/duration_text.hpp"
#include "strategies/search/pareto.hpp"

namespace tandem::analysis {

namespace {

std::string fmt(const char* format, double value) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, format, value);
  return buffer;
}

std::string seconds_text(double s) {
  if (s >= 1) return fmt("%.3f s", s);
  if (s >= 1e-3) return fmt("%.3f ms", s * 1e3);
  return fmt("%.1f us", s * 1e6);
}

std::string objective_text(search::Objective objective, double value) {
  switch (objective) {
    case search::Objective::time: return seconds_text(value);
    case search::Objective::cost: return fmt("%.4g USD", value);
    case search::Objective::energy: return fmt("%.4g J", value);
    case search::Objective::time_to_train: return format_duration(value);
    case search::Objective::time_to_target_loss: return format_duration(value);
  }
  return "";
}

// What the objective's value is, in words.
std::string objective_meaning(search::Objective objective) {
  if (objective == search::Objective::time_to_train)
    return "expected time to train the reliability target, failures, checkpoints and restarts included";
  if (objective == search::Objective::time_to_target_loss)
    return "time to the target loss: the steps the strategy took to it in the measured convergence file, times "
           "the simulated step (a small model's steps standing for this model's)";
  return std::string(to_string(objective)) + " per iteration";
}

search::ParetoAxis pareto_axis(search::Objective objective) {
  return objective == search::Objective::cost ? search::ParetoAxis::cost : search::ParetoAxis::memory;
}

std::string row(const search::Scored& s) {
  const search::Evaluation& e = s.evaluation;
  return seconds_text(e.iteration_time_s) + "  " + fmt("%10.4g", e.tokens_per_s) + " tok/s  MFU " +
         fmt("%5.1f%%", 100 * e.mfu) + "  mem " + fmt("%6.2f GiB", e.peak_memory_bytes / kGiB) +
         fmt(" (%3.0f%%)", 100 * e.memory_fraction) + "  compute " + seconds_text(e.compute_s) + ", comm " +
         seconds_text(e.exposed_comm_s) + ", idle " + seconds_text(e.idle_s) + "  " +
         fmt("%.4g USD/it", e.usd_per_iteration()) + "  " + fmt("%.4g J/it", e.energy_per_iteration_j) +
         (e.goodput > 0 ? "\n     goodput " + fmt("%.1f%%", 100 * e.goodput) +
                              (e.mtbf_s > 0 ? ", an interruption every " + format_duration(e.mtbf_s) : ", nothing fails") +
                              (e.checkpoint_interval_s > 0 ? ", a checkpoint every " + format_duration(e.checkpoint_interval_s)
                                                           : std::string()) +
                              (e.episode_throughput < 1 ? ", " + fmt("%.1f%%", 100 * (1 - e.episode_throughput)) +
                                                              " of the speed lost to slowdown episodes"
                                                        : std::string()) +
                              ", " + format_duration(e.time_to_train_s) + " to train"
                        : std::string()) +
         (e.steps_to_target_loss > 0 ? "\n     " + fmt("%.0f", e.steps_to_target_loss) + " steps to the target loss (measured), " +
                                           format_duration(e.time_to_target_loss_s)
                                     : std::string());
}

nlohmann::json scored_json(const search::Scored& s) {
  const search::Candidate& c = s.candidate;
  return {{"candidate", c.key()},
          {"knobs", search::to_json(c)},
          {"heterogeneity_aware", c.heterogeneity_aware()},
          {"objective", s.feasible() ? nlohmann::json(s.value) : nlohmann::json(nullptr)},
          {"lower_bound", s.bound},
          {"prediction", search::to_json(s.evaluation)}};
}

// One simulated candidate in the report's schema (analysis/report/README.md, tandem-search/1).
// `on_front`: on the time-vs-memory Pareto front (the report's scatter), when known.
nlohmann::json report_candidate(const search::Scored& s, int rank, std::optional<bool> on_front) {
  const search::Evaluation& e = s.evaluation;
  nlohmann::json c = {{"rank", rank},
                      {"strategy", s.candidate.key()},
                      {"iteration_time_s", e.iteration_time_s},
                      {"tokens_per_s", e.tokens_per_s},
                      {"mfu", e.mfu},
                      {"peak_memory_bytes", e.peak_memory_bytes},
                      {"fits_in_memory", e.ok && e.memory_fraction <= 1.0},
                      {"breakdown", {{"compute_s", e.compute_s}, {"exposed_comm_s", e.exposed_comm_s}, {"idle_s", e.idle_s}}},
                      {"config", search::to_json(s.candidate)}};
  if (on_front) c["pareto"] = *on_front;
  if (e.goodput > 0) {
    c["goodput"] = e.goodput;
    c["time_to_train_s"] = e.time_to_train_s;
  }
  if (e.steps_to_target_loss > 0) {
    c["steps_to_target_loss"] = e.steps_to_target_loss;
    c["time_to_target_loss_s"] = e.time_to_target_loss_s;
  }
  if (e.memory_fraction > 0) c["memory_capacity_bytes"] = e.peak_memory_bytes / e.memory_fraction;
  return c;
}

// Every simulated candidate, best first for the objective (ties by the canonical key, as the
// search breaks them); failed simulations last.
nlohmann::json report_candidates(const search::SearchResult& r, search::ParetoAxis axis,
                                 const std::vector<search::Scored>& front) {
  std::vector<const search::Scored*> order;
  for (const auto& s : r.all)
    if (s.evaluation.ok) order.push_back(&s);
  std::stable_sort(order.begin(), order.end(), [](const search::Scored* a, const search::Scored* b) {
    if (a->value != b->value) return a->value < b->value;
    return a->candidate.key() < b->candidate.key();
  });
  std::set<std::string> on_front;
  for (const auto& s : front) on_front.insert(s.candidate.key());
  nlohmann::json candidates = nlohmann::json::array();
  for (const search::Scored* s : order)
    candidates.push_back(report_candidate(
        *s, static_cast<int>(candidates.size()) + 1,
        // The report plots time vs memory; a front on another axis (cost) is left for it to compute.
        axis == search::ParetoAxis::memory ? std::optional<bool>(on_front.count(s->candidate.key()) > 0) : std::nullopt));
  return candidates;
}

}  // namespace

std::optional<HeterogeneityGain> heterogeneity_gain(const search::SearchResult& result) {
  HeterogeneityGain g;
  g.aware = search::best_of_kind(result, true);
  g.uniform = search::best_of_kind(result, false);
  if (g.aware == nullptr || g.uniform == nullptr) return std::nullopt;
  g.percent = 100.0 * (g.uniform->value - g.aware->value) / g.uniform->value;
  return g;
}

std::string search_report_text(const search::SearchResult& r, const SearchReportContext& ctx) {
  std::ostringstream out;
  out << "search      " << ctx.scenario << "  (" << ctx.model << " on " << ctx.cluster << ")\n";
  out << "objective   " << objective_meaning(r.objective) << " (lower is better), " << to_string(r.algorithm)
      << " search, " << ctx.workers << " worker process(es), " << fmt("%.1f s", ctx.wall_time_s) << " wall\n";
  out << "space       " << r.combinations << " combinations, " << r.valid << " valid; " << r.evaluated
      << " simulated, " << r.pruned_by_bound << " ruled out by the lower bound (coverage "
      << fmt("%.1f%%", 100 * r.coverage()) << ")\n";
  for (const auto& [reason, count] : r.dropped) out << "  dropped   " << count << "  " << reason << "\n";
  for (const auto& profile : ctx.profiles) out << "profile     " << profile << "\n";
  for (const auto& line : ctx.collectives) out << "collectives " << line << "\n";
  if (!ctx.objective_basis.empty()) out << "basis       " << ctx.objective_basis << "\n";
  out << "\ntop " << r.ranked.size() << " by " << to_string(r.objective) << ":\n";
  int rank = 1;
  for (const search::Scored& s : r.ranked) {
    out << fmt("%3.0f  ", rank++) << objective_text(r.objective, s.value) << "  " << s.candidate.key() << "\n";
    out << "     " << row(s) << "\n";
  }
  if (r.ranked.empty()) out << "  (no feasible strategy)\n";
  const search::ParetoAxis axis = pareto_axis(r.objective);
  out << "\nPareto front (iteration time vs " << to_string(axis) << "):\n";
  for (const search::Scored& s : search::pareto_front(r.all, axis))
    out << "  " << seconds_text(s.evaluation.iteration_time_s) << "  "
        << (axis == search::ParetoAxis::memory ? fmt("%.2f GiB", s.evaluation.peak_memory_bytes / kGiB)
                                               : fmt("%.4g USD/it", s.evaluation.usd_per_iteration()))
        << "  " << s.candidate.key() << "\n";
  if (ctx.heterogeneous) {
    if (auto g = heterogeneity_gain(r)) {
      out << "\nheterogeneity-aware " << (g->percent >= 0 ? "beats" : "loses to") << " uniform by "
          << fmt("%.1f%%", g->percent >= 0 ? g->percent : -g->percent) << ": "
          << objective_text(r.objective, g->aware->value) << " (" << g->aware->candidate.key() << ") vs "
          << objective_text(r.objective, g->uniform->value) << " (" << g->uniform->candidate.key() << ")\n";
    } else {
      out << "\nheterogeneity-aware vs uniform: not both kinds were simulated\n";
    }
  }
  if (!ctx.winner_file.empty())
    out << "\nwinner      " << ctx.winner_file << "  (tandem simulate " << ctx.winner_file << ")\n";
  return out.str();
}

nlohmann::json search_report_json(const search::SearchResult& r, const SearchReportContext& ctx) {
  nlohmann::json ranked = nlohmann::json::array(), pareto = nlohmann::json::array();
  nlohmann::json simulated = nlohmann::json::array();
  for (const auto& s : r.ranked) ranked.push_back(scored_json(s));
  for (const auto& s : r.all) simulated.push_back(scored_json(s));
  const search::ParetoAxis axis = pareto_axis(r.objective);
  const auto front = search::pareto_front(r.all, axis);
  for (const auto& s : front) pareto.push_back(scored_json(s));
  nlohmann::json j = {{"schema", "tandem-search/1"},  // what `tandem report --search` reads
                      {"candidates", report_candidates(r, axis, front)},
                      {"scenario", ctx.scenario},
                      {"model", ctx.model},
                      {"cluster", ctx.cluster},
                      {"profiles", ctx.profiles},
                      {"collectives_basis", ctx.collectives},
                      {"objective", to_string(r.objective)},
                      {"objective_basis", ctx.objective_basis},
                      {"algorithm", to_string(r.algorithm)},
                      {"workers", ctx.workers},
                      {"wall_time_s", ctx.wall_time_s},
                      {"combinations", r.combinations},
                      {"valid", r.valid},
                      {"simulated", r.evaluated},
                      {"pruned_by_bound", r.pruned_by_bound},
                      {"coverage", r.coverage()},
                      {"dropped", r.dropped},
                      {"ranked", ranked},
                      {"pareto_axis", to_string(axis)},
                      {"pareto_front", pareto},
                      {"winner_file", ctx.winner_file},
                      {"all_simulated", simulated}};
  for (auto& c : j["candidates"]) {
    const auto curve = ctx.loss_per_step.find(c["strategy"].get<std::string>());
    if (curve != ctx.loss_per_step.end()) c["loss_per_step"] = curve->second;
  }
  if (ctx.target_loss) j["target_loss"] = *ctx.target_loss;
  if (ctx.heterogeneous) {
    if (auto g = heterogeneity_gain(r))
      j["heterogeneity"] = {{"aware_best", scored_json(*g->aware)},
                            {"uniform_best", scored_json(*g->uniform)},
                            {"gain_percent", g->percent}};
  }
  return j;
}

}  // namespace tandem::analysis
