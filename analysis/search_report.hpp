// What `tandem search` tells a person (text) and a program (JSON): the space and why parts of
// it were dropped, how much was simulated or ruled out by the lower bound, the top k with time,
// throughput, MFU, memory and where the time went, the Pareto front, and on mixed clusters how
// much the best heterogeneity-aware strategy gains over the best uniform one.
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <string>

#include "strategies/search/search.hpp"

namespace tandem::analysis {

struct SearchReportContext {
  std::string scenario;
  std::string model;
  std::string cluster;
  bool heterogeneous = false;  // compare heterogeneity-aware and uniform strategies
  // "DEVICE: what its profile rests on" per node group (DeviceProfile::basis_text).
  std::vector<std::string> profiles;
  // "DEVICE: what times its collectives" (sim::collectives_basis), once per distinct line.
  std::vector<std::string> collectives;
  // What the objective rests on beyond the simulation, when something does (time_to_target_loss:
  // the convergence file, what it trained, the target); "" otherwise.
  std::string objective_basis;
  // time_to_target_loss: the measured loss per step of each simulated candidate's strategy, keyed
  // by candidate key, and the target; the JSON's candidates carry them (the report plots loss
  // against predicted wall time).
  std::map<std::string, std::vector<double>> loss_per_step;
  std::optional<double> target_loss;
  std::string winner_file;     // where the winner's scenario was written ("" if not)
  double wall_time_s = 0;
  int workers = 1;
};

// The gain of the best heterogeneity-aware candidate over the best uniform one, in percent of the
// uniform one's objective (positive: aware is better); empty unless both kinds were simulated.
struct HeterogeneityGain {
  const search::Scored* aware = nullptr;
  const search::Scored* uniform = nullptr;
  double percent = 0;
};
std::optional<HeterogeneityGain> heterogeneity_gain(const search::SearchResult& result);

std::string search_report_text(const search::SearchResult& result, const SearchReportContext& context);
nlohmann::json search_report_json(const search::SearchResult& result, const SearchReportContext& context);

}  // namespace tandem::analysis
