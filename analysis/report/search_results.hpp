// Search results as the report reads them: the JSON document "tandem-search/1" (schema in
// analysis/report/README.md). `tandem search` writes it; any tool may.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/units.hpp"

namespace tandem::report {

struct SearchCandidate {
  int rank = 0;  // 1 = best for the objective
  std::string strategy;
  Seconds iteration_time_s = 0;
  std::optional<double> tokens_per_s;
  std::optional<double> mfu;
  std::optional<Bytes> peak_memory_bytes;
  std::optional<Bytes> memory_capacity_bytes;
  std::optional<bool> fits_in_memory;
  std::optional<Seconds> compute_s, exposed_comm_s, idle_s;  // breakdown, when given
  // With a reliability section (objective time_to_train): the expected share of wall time that
  // trains and the expected time to train the target tokens.
  std::optional<double> goodput;
  std::optional<Seconds> time_to_train_s;
  // Search by time to a target loss: the loss per step its strategy measured (step 1 first).
  std::vector<double> loss_per_step;
  bool pareto = false;
};

// On a mixed cluster: the best heterogeneity-aware candidate against the best uniform one
// (`heterogeneity` in tandem search --json).
struct HeterogeneityComparison {
  std::string aware, uniform;                                // candidate names
  std::optional<double> aware_objective, uniform_objective;  // in the objective's units
  double gain_percent = 0;  // positive: the aware one is better, in percent of the uniform one
};

struct SearchResults {
  std::string file;
  std::string scenario;
  std::string objective;
  std::string objective_basis;        // what the objective rests on beyond the simulation, if said
  std::optional<double> target_loss;  // time_to_target_loss: the target
  std::vector<SearchCandidate> candidates;  // ordered by rank
  bool pareto_given = false;  // false: the front was computed here (time and memory, both minimised)
  std::optional<HeterogeneityComparison> heterogeneity;
};

SearchResults read_search_json(const std::string& path);

// Marks the candidates no other candidate beats on both iteration time and peak memory (lower is
// better; a candidate without a memory figure competes on time alone).
void mark_pareto_front(std::vector<SearchCandidate>& candidates);

}  // namespace tandem::report
