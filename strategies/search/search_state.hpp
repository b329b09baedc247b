// The bookkeeping the search algorithms share: candidates with their bounds, the simulations
// done (each candidate simulated at most once), the top k so far, and the pruning threshold.
#pragma once

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "strategies/search/search.hpp"

namespace tandem::search {

class SearchState {
 public:
  SearchState(std::vector<Candidate> candidates, std::vector<Estimate> estimates, Evaluator& evaluator,
              const SearchSettings& settings, const ProgressFn& progress);

  int size() const { return static_cast<int>(items_.size()); }
  const Candidate& candidate(int i) const { return items_[i].candidate; }
  double bound(int i) const { return items_[i].bound; }
  bool evaluated(int i) const { return done_[i]; }
  double value(int i) const;  // +inf until evaluated
  const Estimate& estimate(int i) const { return items_[i].estimate; }
  int evaluations() const { return evaluations_; }
  // A candidate found during the search (not enumerated); returns its index.
  int add(const Candidate& candidate, const Estimate& estimate);

  // Estimates in full those of `indices` that were only sketched (one call to the evaluator): one
  // that turns out invalid or unable to fit is dropped (never simulated), the others get their
  // full bound.
  void refine(const std::vector<int>& indices);
  bool dropped(int i) const { return !dropped_reason_[i].empty(); }
  // Simulates those of `indices` not simulated yet (as one batch), refined first, then reports
  // progress. A candidate that refinement drops or rules out is not simulated.
  void evaluate(const std::vector<int>& indices);
  // False when candidate i's lower bound proves it cannot enter the top k nor be the best of its
  // kind (heterogeneity-aware or uniform).
  bool may_matter(int i) const;
  // The best simulated candidate, -1 if none is feasible.
  int best() const;
  void set_remaining(std::int64_t remaining) { remaining_ = remaining; }
  void set_algorithm(Algorithm algorithm) { algorithm_ = algorithm; }

  SearchResult result(Algorithm algorithm) const;

 private:
  double threshold(int i) const;
  void report() const;
  double expected_size(double remaining_size) const;

  std::vector<Scored> items_;
  std::vector<bool> done_;
  std::vector<std::string> dropped_reason_;  // set when refinement dropped it
  Evaluator& evaluator_;
  const SearchSettings& settings_;
  const ProgressFn& progress_;
  std::set<std::pair<Ranked, int>> top_;  // feasible (value, candidate) and index, best first
  double best_of_kind_[2];           // best value of uniform [0] and heterogeneity-aware [1]
  int evaluations_ = 0;
  std::int64_t remaining_ = 0;
  Algorithm algorithm_ = Algorithm::exhaustive;
};

// The two algorithms, over a state holding the valid candidates (search.hpp says how they work).
// Branch and bound; with `max_simulations` >= 0 it stops once the state holds that many
// simulations. Returns whether it closed the space (every candidate simulated or ruled out).
bool run_exhaustive(SearchState& state, const SearchSettings& settings, int max_simulations = -1);
void run_guided(SearchState& state, const SearchSettings& settings);
// Step 3 of search.hpp: adds and simulates explicit layer partitions (nothing when turned off).
void refine_partitions(SearchState& state, Evaluator& evaluator, const SearchSettings& settings);

}  // namespace tandem::search
