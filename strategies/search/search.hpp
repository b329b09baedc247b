// Strategy search: find the best candidates of a space for an objective, simulating as few as
// possible. Algorithms work against an abstract Evaluator (the simulator in worker processes for
// real; an analytic stand-in in tests), in batches whose make-up never depends on how many
// workers evaluate them, so the answer is the same for 1 worker or 64.
//
//   1. Every structurally valid candidate is estimated (strategy built, memory and lower bounds
//      traced): invalid ones and ones that cannot fit are dropped, with the reason counted. Above
//      `estimate_limit` candidates, a cheaper sketch first (validity, a looser bound), and the
//      full estimate just before simulating: a candidate that cannot fit is dropped then, one
//      whose full bound rules it out is pruned.
//   2. exhaustive  candidates in order of their lower bound; one whose bound exceeds the k-th
//                  best value found so far (and the best of its own kind, heterogeneity-aware or
//                  uniform, so that comparison stays exact) cannot enter the top k and is skipped.
//      guided      greedy descent over neighbours (one or two knobs changed) from the candidate
//                  with the lowest bound, then simulated annealing chains with a fixed seed, then
//                  a final descent from the best found; bounded by a number of simulations, and
//                  states how much of the space it covered.
//      automatic   exhaustive up to `exhaustive_limit` valid candidates; above, branch and bound
//                  on `max_evaluations` simulations, exact when the bounds close the space within
//                  them, else guided on for half as many again (the result names which answered).
//   3. refinement  (when `refine_evaluations` > 0) non-uniform layer partitions, which no
//                  enumeration could list: from the best pipelined candidates (non-interleaved),
//                  greedy descent over moves of one layer between adjacent stages, each move
//                  built and memory-checked like any candidate before it is simulated, at most
//                  `refine_evaluations` simulations on top of the algorithm's.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "strategies/search/candidate.hpp"
#include "strategies/search/evaluation.hpp"
#include "strategies/search/objective.hpp"
#include "strategies/search/search_space.hpp"

namespace tandem::search {

class Evaluator {
 public:
  virtual ~Evaluator() = default;
  // Cheap, in order: validity, memory and lower bounds of each candidate.
  virtual std::vector<Estimate> estimate(const std::vector<Candidate>& candidates) = 0;
  // Cheaper still, for large spaces: validity and lower bounds no larger than estimate's, memory
  // unknown (Estimate::sketched). The default estimates in full.
  virtual std::vector<Estimate> sketch(const std::vector<Candidate>& candidates) { return estimate(candidates); }
  // Expensive (a simulation each), in order. May run the candidates in parallel.
  virtual std::vector<Evaluation> evaluate(const std::vector<Candidate>& candidates) = 0;
};

enum class Algorithm { automatic, exhaustive, guided };
const char* to_string(Algorithm algorithm);
Algorithm parse_algorithm(const std::string& text);  // "auto", "exhaustive", "guided"

struct SearchSettings {
  Objective objective = Objective::time;
  int top_k = 10;
  Constraints constraints;
  Algorithm algorithm = Algorithm::automatic;
  int exhaustive_limit = 200;  // automatic: exhaustive up to this many valid candidates (then bounded)
  int max_evaluations = 64;    // guided: simulations at most
  int batch_size = 4;          // candidates handed to the evaluator at once
  std::uint64_t seed = 1;      // guided: the annealing's random numbers
  int refine_evaluations = 0;  // refinement of layer partitions: simulations at most (0: off)
  // exhaustive: skip what the bounds rule out (branch and bound: the same top k); false simulates
  // every candidate (the reference a benchmark compares against).
  bool prune = true;
  // Spaces of more candidates are sketched up front and each candidate estimated in full only
  // when its turn to be simulated comes (most never do: their sketch rules them out).
  int estimate_limit = 200;
};

struct Scored {
  Candidate candidate;
  Estimate estimate;
  Evaluation evaluation;
  double value = 0;  // objective (+inf when infeasible)
  double bound = 0;  // its lower bound
  bool feasible() const;
};

struct SearchProgress {
  Algorithm algorithm = Algorithm::exhaustive;  // the one running
  std::int64_t valid = 0;      // candidates to consider
  std::int64_t evaluated = 0;  // simulated so far
  std::int64_t pruned = 0;     // known not to matter (bound above the k-th best)
  std::int64_t remaining = 0;  // at most this many simulations to go
  // Sizes of the simulations (Estimate::simulation_size) done and at most to go: what the time
  // left is estimated from, since candidates differ in cost by orders of magnitude.
  double done_size = 0;
  double remaining_size = 0;
  // Of which the search expects to simulate: the open candidates whose bound lies below the
  // threshold it is heading for, predicted from the values found so far (each open candidate's
  // value guessed as its bound times the median value / bound of those simulated).
  double expected_size = 0;
  double done_simulation_wall_s = 0;  // the simulations done, one after another
  const Scored* best = nullptr;
};
using ProgressFn = std::function<void(const SearchProgress&)>;

struct SearchResult {
  Algorithm algorithm = Algorithm::exhaustive;  // the one that ran
  Objective objective = Objective::time;
  std::int64_t combinations = 0;                // looked at by the enumeration
  std::map<std::string, std::int64_t> dropped;  // reason -> count, before and after simulating
  std::int64_t valid = 0;                       // built and fit the memory bound
  std::int64_t evaluated = 0;                   // simulated
  std::int64_t pruned_by_bound = 0;             // not simulated: bound above the final k-th best
  std::vector<Scored> ranked;                   // the top k feasible, best first
  std::vector<Scored> all;                      // every simulated candidate, canonical order
  // Share of the valid space either simulated or proven unable to enter the top k.
  double coverage() const;
};

SearchResult run_search(const Enumeration& space, Evaluator& evaluator, const SearchSettings& settings,
                        const ProgressFn& progress = {});

// The best feasible candidate of each kind (heterogeneity-aware or uniform), if any was simulated.
const Scored* best_of_kind(const SearchResult& result, bool heterogeneity_aware);

}  // namespace tandem::search
